"""Keep hidden inputs out of the feedback a student sees.

On a hidden case, whatever the student's code controls (an exception's message and class name, the
shape of what it returned, the names of its parameters, a warning's message) could carry a hidden input
out to the student (raise ValueError(str(x.tolist())) on a randomized case). On hidden cases those parts
are shown only in a form that cannot:

- digits are masked (``#``) and long tokens cut (``…``), except inside a name that is kept whole;
- a name is kept whole when it is the unit's own (``KEPT_NAMES``: steps, dtypes) or the student's own: an
  identifier of their own source files (``names_in_source``: the files as staged, parsed on the trusted
  side, never run; in a notebook, the cells that define what is checked). Source written before any case
  ran cannot hold a hidden input, so naming ``MultiHeadAttentionWrapper`` or ``causal_attention_weights``
  tells nothing hidden; any other token is masked as before;
- an exception's class name shows when it is Python's or torch's, or one of the student's own names;
- a dimension of a shape the student's code returned shows when it is one of the case's own sizes
  (``Hidden.sizes``, ``sizes_of``): the integers among its arguments (d_in, d_out, context_length,
  num_heads, d_k...), the dimensions of its input tensors and of the expected answer, and the product of
  two of those (heads concatenated on the batch or token dim, a batch flattened into its rows). None of
  these is hidden: a case's name states its sizes, and its expected shape is shown on every hidden case;
  only the values are hidden. Any other dimension is a ``?``;
- a parameter's name shows when each of its dotted parts is the student's own name or an index below the
  largest of the case's sizes (``heads.1.W_query.weight``), else "(another name)".

``Hidden`` carries what may be shown of one hidden case: it is falsy, so ``if public:`` reads it as not
public everywhere a bool was passed before.
"""
from __future__ import annotations

import ast
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


class Hidden:
    """A hidden case as redaction sees it: not public (falsy), with the student's own ``names`` and the case's own
    ``sizes``, which may be shown whole."""

    def __init__(self, names=(), sizes=()):
        self.names = frozenset(names)
        self.sizes = frozenset(sizes)

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Hidden({len(self.names)} names, sizes {sorted(self.sizes)})"


def _own(public) -> frozenset:
    return getattr(public, "names", frozenset())


def names_in_source(text: str) -> frozenset:
    """The identifiers of a student's source (names, attributes, functions, classes, arguments, keywords, imports):
    parsed, never run. A source that does not parse has none."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            found.add(node.arg)
        elif isinstance(node, ast.alias):
            found.update(part for part in (node.asname or node.name).split("."))
    return frozenset(found)


def sizes_of(*values) -> set:
    """The case's own sizes in ``values`` (its arguments, its inputs, the expected answer): integers, and the
    dimensions of tensors, looked for in lists, tuples and dicts; and the product of each two of them."""
    found: set = set()

    def walk(value, depth: int = 0) -> None:
        if depth > 6:
            return
        if isinstance(value, bool):
            return
        if isinstance(value, int):
            found.add(value)
        elif hasattr(value, "shape") and hasattr(value, "dim"):  # a tensor, without importing torch here
            found.update(int(d) for d in value.shape)
        elif isinstance(value, dict) and not any(str(key).startswith("$") for key in value):  # not a module's spec
            for item in value.values():
                walk(item, depth + 1)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, depth + 1)

    for value in values:
        walk(value)
    small = sorted(d for d in found if 0 <= d <= 1 << 20)
    return set(small) | {a * b for i, a in enumerate(small) for b in small[i:]}


def _mask_digits(message: str, own: frozenset = frozenset()) -> str:
    """Every digit masked, except inside a kept name (``SelfAttention_v2`` stays itself)."""
    out, last = [], 0
    for match in _NAME.finditer(message):
        if match.group() in KEPT_NAMES or match.group() in own:
            out += [re.sub(r"\d", "#", message[last:match.start()]), match.group()]
            last = match.end()
    out.append(re.sub(r"\d", "#", message[last:]))
    return "".join(out)


def redact_text(message: str, public, limit: int = 600) -> str:
    if public:
        return message[:limit]
    own = _own(public)
    if not own:
        return _LONG_TOKEN.sub("…", _mask_digits(message))[:200]
    # the student's own names stay whole however long they are; the text between them is masked as any other
    out, last = [], 0
    for match in _NAME.finditer(message):
        if match.group() in own or match.group() in KEPT_NAMES:
            out += [_LONG_TOKEN.sub("…", _mask_digits(message[last:match.start()])), match.group()]
            last = match.end()
    out.append(_LONG_TOKEN.sub("…", _mask_digits(message[last:])))
    return "".join(out)[:200]


def is_known_error(name: str) -> bool:
    """A name an exception class of Python's or torch's has (a student's class may share it: its message is
    redacted all the same)."""
    return name in _BUILTIN_ERRORS or name in _TORCH_ERRORS


def redact_type(name: str, public) -> str:
    if public or is_known_error(name) or name in _own(public):
        return name
    return "an exception of a class defined in your code"


def redact_dims(got: list, known: set, public) -> str:
    """A shape for display; on hidden cases a dimension shows only when it is one the case itself has."""
    if public:
        return "[" + ", ".join(str(d) for d in got) + "]"
    if len(got) > 8:
        return f"a shape with {len(got)} dimensions"
    known = set(known) | set(getattr(public, "sizes", ()))
    return "[" + ", ".join(str(d) if d in known else "?" for d in got) + "]"


def shown_name(name: str, public) -> bool:
    """Whether a dotted name the student's code made (a parameter's, an attribute's) may be shown on this case."""
    if public:
        return True
    own, sizes = _own(public), getattr(public, "sizes", ())
    largest = max(sizes, default=0)
    return bool(name) and all(part in own or part in KEPT_NAMES or (part.isdigit() and int(part) < largest)
                              for part in name.split("."))


def redact_names(got: list, known: list, public) -> list:
    return list(got) if public else [n if n in known or shown_name(n, public) else "(another name)" for n in got]
