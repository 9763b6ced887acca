"""Keep hidden inputs out of the feedback a student sees.

On a hidden case, whatever the student's code controls (an exception's message and class name, the
shape of what it returned, the names of its parameters) could carry a hidden input out to the student
(raise ValueError(str(x.tolist())) on a randomized case). On hidden cases those parts are shown only
in a form that cannot: digits masked, long tokens cut, class names only when they are Python's or
torch's own, dimensions only when they are among the case's own.
"""
from __future__ import annotations

import builtins
import re

_BUILTIN_ERRORS = {name for name, value in vars(builtins).items()
                   if isinstance(value, type) and issubclass(value, BaseException)}
_TORCH_ERRORS = {"OutOfMemoryError", "LinAlgError", "NotImplementedError"}
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_#-]{24,}")


#: names with digits that redaction keeps whole: the unit's own identifiers and torch's dtypes (a test checks
#: that every step, module and parameter name of course.yml with a digit is here)
KEPT_NAMES = frozenset({"SelfAttention_v1", "SelfAttention_v2", "gpt2_small_attention", "float16", "float32",
                        "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "ch03", "ch3"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _mask_digits(message: str) -> str:
    """Every digit masked, except inside a kept name (``SelfAttention_v2`` stays itself)."""
    out, last = [], 0
    for match in _NAME.finditer(message):
        if match.group() in KEPT_NAMES:
            out += [re.sub(r"\d", "#", message[last:match.start()]), match.group()]
            last = match.end()
    out.append(re.sub(r"\d", "#", message[last:]))
    return "".join(out)


def redact_text(message: str, public: bool, limit: int = 600) -> str:
    if public:
        return message[:limit]
    masked = _LONG_TOKEN.sub("…", _mask_digits(message))
    return masked[:200]


def is_known_error(name: str) -> bool:
    """A name an exception class of Python's or torch's has (a student's class may share it: its message is
    redacted all the same)."""
    return name in _BUILTIN_ERRORS or name in _TORCH_ERRORS


def redact_type(name: str, public: bool) -> str:
    if public or is_known_error(name):
        return name
    return "an exception of a class defined in your code"


def redact_dims(got: list, known: set, public: bool) -> str:
    """A shape for display; on hidden cases a dimension shows only when it is one the case itself has."""
    if public:
        return "[" + ", ".join(str(d) for d in got) + "]"
    if len(got) > 8:
        return f"a shape with {len(got)} dimensions"
    return "[" + ", ".join(str(d) if d in known else "?" for d in got) + "]"


def redact_names(got: list, known: list, public: bool) -> list:
    return list(got) if public else [n if n in known else "(another name)" for n in got]
