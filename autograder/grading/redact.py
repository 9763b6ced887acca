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
_TORCH_ERRORS = {"OutOfMemoryError", "LinAlgError", "NotImplementedError", "WorkerDied", "LimitExceeded",
                 "MissingModule", "UnreadableSource", "SymbolicLink", "MalformedNotebook"}
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_#-]{24,}")


def text(message: str, public: bool, limit: int = 600) -> str:
    if public:
        return message[:limit]
    masked = _LONG_TOKEN.sub("…", re.sub(r"\d", "#", message))
    return masked[:200]


def type_name(name: str, public: bool) -> str:
    if public or name in _BUILTIN_ERRORS or name in _TORCH_ERRORS:
        return name
    return "an exception of a class defined in your code"


def dims(got: list[int], known: set[int], public: bool) -> str:
    """A shape for display; on hidden cases a dimension shows only when it is one the case itself has."""
    if public:
        return "[" + ", ".join(str(d) for d in got) + "]"
    if len(got) > 8:
        return f"a shape with {len(got)} dimensions"
    return "[" + ", ".join(str(d) if d in known else "?" for d in got) + "]"


def names(got: list[str], known: list[str], public: bool) -> list[str]:
    return list(got) if public else [n if n in known else "(another name)" for n in got]


QUOTED = "[removed: this part of the message quoted the reference solution]"


def reference_lines(feedback: str, lines: set[str]) -> str:
    """Drop any part of ``feedback`` that quotes a line of the reference (as is, or reversed)."""
    if not lines:
        return feedback
    flat = " ".join(feedback.split())
    if not any(line in flat or line[::-1] in flat for line in lines) and "BEGIN SOLUTION" not in feedback:
        return feedback
    kept = []
    for part in feedback.split("\n"):
        norm = " ".join(part.split())
        quoted = "BEGIN SOLUTION" in part or "END SOLUTION" in part or any(
            line in norm or line[::-1] in norm or (len(norm) >= 16 and norm in line) for line in lines)
        kept.append(QUOTED if quoted else part)
    text = "\n".join(kept)
    # a quote spread over several lines of the message: remove the message's student-written part whole
    if any(line in " ".join(text.split()) for line in lines):
        text = "\n".join(QUOTED if part.startswith("  your code raised") else part for part in text.split("\n"))
    return text
