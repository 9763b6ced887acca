"""The isolation levels in order, and the check behind ``grade autograde --require-isolation``.

Strongest first: ``namespaces`` > ``uid+rlimits`` > ``rlimits`` (docs/isolation.md). The zygote finds its
level at start-up (``Zygote.level``); a grader asked for at least a level refuses to grade below it.
"""
from __future__ import annotations

LEVELS = ("rlimits", "uid+rlimits", "namespaces")  # weakest first


def refusal(level: str, required: str | None) -> str | None:
    """Why grading must not start at ``level`` when at least ``required`` was asked; None if it may."""
    if required is None or LEVELS.index(level) >= LEVELS.index(required):
        return None
    return (f"the isolation here is {level}, below the required {required} (--require-isolation): "
            "nothing was graded at this level. Run the grader as root on Linux for namespaces "
            "(docs/isolation.md), or lower --require-isolation.")
