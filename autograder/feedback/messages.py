"""The fixed sentences: an error in the student's code, a stub, an input modified in place, exceptions."""
from __future__ import annotations

import re

from .redact import is_known_error, redact_text, redact_type

NOT_ATTEMPTED = "not attempted yet (the stub still raises NotImplementedError)"


#: staging's errors: a file the kit could not read, said as what it is (no code of it ran)
UNREADABLE = ("MalformedNotebook", "UnreadableSource", "SymbolicLink", "MissingModule")
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


#: the kit's own sentences naming a limit (``sandbox/host.time_limit_hit``, ``worker/limits.sentence``): shown
#: whole on hidden cases too (their numbers are the limit's value and a line of the student's file, never an input)
_LIMIT_SENTENCES = re.compile(
    r"the time limit of \d{1,6}(\.\d{1,3})? s for this step was hit: your code was "
    r"(at [\w./-]{1,100}\.py, line \d{1,6}, in [\w<>.]{1,100}|still running) when it was stopped "
    r"\(an endless loop, or far more work than the step needs\?\)"
    r"|the (output|memory|process) limit( of [\d,]{1,12} (MB|processes))? was hit: your code (printed or wrote more "
    r"than the output limit allows|asked for more memory than the memory limit allows|started more processes or "
    r"threads than the process limit allows)")


def _at(where: dict, public: bool) -> str:
    """"file.py, line N, in f": the student's own code, or ""."""
    if not where.get("file"):
        return ""
    at = f"{redact_text(str(where['file']), public, 100)}, line {where.get('line')}"
    return at + (f", in {redact_text(str(where['function']), public, 100)}" if where.get("function") else "")


def raised(error: dict, public: bool = True) -> list[str]:
    """Why a request gave no result. ``error`` holds its ``type`` (class name), ``message``, ``phase`` ("call",
    "__init__", "forward", "backward", ...) and, when known, ``where`` (``file``, ``line``, ``function``,
    ``text``: the innermost line of the student's own code; None when no frame was the student's).

    A limit is said as the limit, with where the code was; a file staging could not read, as what it is; an
    error raised with no frame of the student's code, as what the grader could not do with the student's
    object (never "your code raised", never a file of the grader's).
    """
    kind = str(error.get("type"))
    where = error.get("where") or {}
    message = redact_text(str(error.get("message", "")), public)
    if kind in ("WorkerDied", "Tampering"):
        return [message or "the worker process ended"]
    if kind == "LimitExceeded":
        if _LIMIT_SENTENCES.fullmatch(str(error.get("message", ""))):
            message = str(error["message"])
        at = _at(where, public)
        return [message + (f"; your code was at {at} when it was stopped" if at else "")]
    if kind in UNREADABLE:  # the kit's own sentence about a file handed in: nothing of a hidden case in it
        return [str(error.get("message", ""))[:600]]
    if kind == "MissingStep":
        return [message]
    phase = str(error.get("phase", "the call"))
    if not where.get("file") and is_known_error(kind):  # no frame of the student's: the grader's call failed
        doing = GRADER_PHASES.get(phase, f"{phase} failed")
        if phase == "loading the reference weights":  # the grader's own sentence says what is wrong
            return [f"{doing}: {message}"[:600]]
        return [f"{doing}: {redact_type(kind, public)}: {message}"[:600]]
    at = _at(where, public)
    lines = [f"your code raised {redact_type(kind, public)}{f' ({at})' if at else ''} during {phase}: {message}"[:600]]
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
