"""The fixed sentences: an error in the student's code, a stub, an input modified in place, exceptions."""
from __future__ import annotations

from .redact import redact_text, redact_type

NOT_ATTEMPTED = "not attempted yet (the stub still raises NotImplementedError)"


def raised(error: dict, public: bool = True) -> list[str]:
    """The student's code raised: ``error`` holds its ``type`` (class name), ``message``, ``phase`` ("call",
    "__init__", "forward", "backward", ...) and, when known, ``where`` (``file``, ``line``, ``function``,
    ``text``: the innermost line of the student's own code)."""
    if error.get("type") in ("LimitExceeded", "WorkerDied", "Tampering"):
        return [error.get("message", "the worker process ended")]
    where = error.get("where") or {}
    place = ""
    if where.get("file"):
        place = f" ({redact_text(str(where['file']), public, 100)}, line {where.get('line')}"
        place += f", in {redact_text(str(where['function']), public, 100)})" if where.get("function") else ")"
    kind = redact_type(str(error.get("type")), public)
    message = redact_text(str(error.get("message", "")), public)
    lines = [f"your code raised {kind}{place} during {error.get('phase', 'the call')}: {message}"[:600]]
    if where.get("text"):
        lines.append(f"    {redact_text(str(where['text']), public, 200)}")
    return lines


def modified_in_place(names: list) -> str:
    return f"your code modified its input in place ({', '.join(names)}): use out-of-place operations (x / s, not x /= s)"


def should_be_parameter(index: int) -> str:
    return f"output[{index}] should be an nn.Parameter (so that training can update it)"


def frozen_parameter(index: int) -> str:
    return (f"output[{index}] is frozen (requires_grad=False), so training could never update it: "
            "leave requires_grad at its default")


def nothing_raised(wanted: str) -> str:
    return f"expected {wanted} for these arguments, but nothing was raised"


def wrong_exception(wanted: str, got_type: str, message: str, public: bool = True) -> str:
    return f"expected {wanted}, got {redact_type(got_type, public)}: {redact_text(message, public)}"[:300]
