"""The fixed sentences: an error in the student's code, a stub, an input modified in place, exceptions."""
from __future__ import annotations

from .redact import is_known_error, redact_text, redact_type

NOT_ATTEMPTED = "not attempted yet (the stub still raises NotImplementedError)"


#: what the grader was doing with the student's object when it failed without a frame of the student's code
GRADER_PHASES = {
    "setup": "finding your code failed",
    "__init__": "creating your module failed",
    "loading the reference weights": "loading the reference weights into your module failed",
    "forward": "calling your module failed",
    "call": "calling your function failed",
    "backward": "the backward pass through your output failed",
    "returning the result": "sending your result back failed",
}


def _at(where: dict, public: bool) -> str:
    """"file.py, line N, in f": the student's own code, or "". In a notebook's module, the notebook's cell that the
    trusted side found for that line ("attention.ipynb, code cell 12, line 3, in f": grading/runner.py, ``locate``)."""
    if where.get("cell"):
        function = where.get("function")
        named = f", in {redact_text(str(function), public, 100)}" if function and function != "<module>" else ""
        return str(where["cell"]) + named
    if not where.get("file"):
        return ""
    at = f"{redact_text(str(where['file']), public, 100)}, line {where.get('line')}"
    return at + (f", in {redact_text(str(where['function']), public, 100)}" if where.get("function") else "")


#: the kinds of problem the trusted side sets itself (``grading/runner.py: limit_error``, staging), said in its words
TRUSTED_KINDS = ("limit", "died", "protocol", "staging")


def raised(error: dict, public: bool = True) -> list[str]:
    """Why a request gave no result. ``error`` holds its ``type`` (class name), ``message``, ``phase`` ("call",
    "__init__", "forward", "backward", ...) and, when known, ``where`` (``file``, ``line``, ``function``,
    ``text``: the innermost line of the student's own code; None when no frame was the student's).

    A problem the trusted side saw itself (its ``kind``: a limit, a worker that died, a broken protocol, a file staging
    could not read) is said in the kit's own words; a ``hint`` is the kit's words about the student's error (a limit
    Python's error is what it raises at, a step the submission does not define). Everything else is the student's
    own: its type and message are redacted on hidden counts whatever the type is called, and an error raised with no
    frame of the student's code is said as what the grader could not do with the student's object (never "your code
    raised", never a file of the grader's).
    """
    kind = error.get("kind")
    where = error.get("where") or {}
    at = _at(where, public)
    if kind in TRUSTED_KINDS:
        message = str(error.get("hint") or error.get("message") or "the worker process ended")
        if kind == "staging":
            return [message[:600]]
        return [message + (f"; your code was at {at} when it was stopped" if at and kind == "limit" else "")]
    if error.get("missing") and error.get("hint"):
        return [str(error["hint"])]
    if error.get("hint"):
        return [str(error["hint"]) + (f" ({at})" if at else "")]
    name = str(error.get("type"))
    message = redact_text(str(error.get("message", "")), public)
    phase = str(error.get("phase", "the call"))
    if not where.get("file") and is_known_error(name):  # no frame of the student's: the grader's call failed
        doing = GRADER_PHASES.get(phase, f"{phase} failed")
        if phase == "loading the reference weights":  # the grader's own sentence says what is wrong
            return [f"{doing}: {message}"[:600]]
        return [f"{doing}: {redact_type(name, public)}: {message}"[:600]]
    lines = [f"your code raised {redact_type(name, public)}{f' ({at})' if at else ''} during {phase}: {message}"[:600]]
    if where.get("source"):  # the student's own line, read by the trusted side from their file: shown whole
        lines.append(f"    {str(where['source'])[:200]}")
    elif where.get("text"):
        lines.append(f"    {redact_text(str(where['text']), public, 200)}")
    return lines


def modified_in_place(names: list) -> str:
    return (f"your code modified its input in place ({', '.join(names)}): use out-of-place operations "
            "(x / s, not x /= s)")


def should_be_parameter(index: int) -> str:
    return (f"note (no points depend on it): output[{index}] should be an nn.Parameter, as in the book, so that a "
            "module it is assigned to registers it")


def frozen_parameter(index: int) -> str:
    return (f"note (no points depend on it): output[{index}] is frozen (requires_grad=False), so training could never "
            "update it: leave requires_grad at its default")


def refused_valid(why: str, got_type: str, message: str, public: bool = True) -> str:
    return (f"{why}: these arguments are valid and must be accepted, but your code raised "
            f"{redact_type(got_type, public)}: {redact_text(message, public)}")[:300]


def nothing_raised(wanted: str) -> str:
    return f"expected {wanted} for these arguments, but nothing was raised"


def wrong_exception(wanted: str, got_type: str, message: str, public: bool = True) -> str:
    return f"expected {wanted}, got {redact_type(got_type, public)}: {redact_text(message, public)}"[:300]
