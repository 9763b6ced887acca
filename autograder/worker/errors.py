"""The shape of an error report, built here only: what went wrong in a submission, as data.

``error`` is what the student's code raised (or what is missing): its type, message and where, as the
feedback shows it. ``failed`` is a worker's answer when a request gives no result: that error, the phase
it happened in, and whether the step was simply not attempted (``NotImplementedError``). Both sides of the
sandbox, staging and the results use these, so no one writes the dict by hand.
"""
from __future__ import annotations

MAX_TYPE, MAX_MESSAGE = 100, 1000


def error(kind: str, message: str, where: dict | None = None) -> dict:
    """``{"type", "message", "where"}``; ``where``: ``{"file", "line", "function"}`` (plus ``text`` and
    ``column`` for a syntax error), or None."""
    return {"type": str(kind)[:MAX_TYPE], "message": str(message)[:MAX_MESSAGE], "where": where}


def failed(report: dict, phase: str, not_attempted: bool = False, **facts) -> dict:
    """An answer carrying ``report``: ``facts`` such as ``missing`` (a worker's), or the trusted side's ``kind`` and
    ``limit`` (``grading/runner.py``)."""
    return {"ok": False, "error": {**report, "phase": phase, "not_attempted": not_attempted, **facts}}
