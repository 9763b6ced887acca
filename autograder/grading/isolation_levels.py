"""The isolation levels in order, and the check behind ``grade autograde --require-isolation``.

Strongest first: ``namespaces`` > ``uid+rlimits`` > ``rlimits`` (docs/isolation.md). The zygote finds its
level at start-up (``Zygote.level``); a grader asked for at least a level refuses to grade below it, and at
``rlimits`` it grades several submissions only for code the instructor trusts. Both the local executor and
every Dask worker ask ``may_grade``, so the rules are written once.
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


def may_grade(level: str, isolation: str, required: str | None, several_untrusted: bool) -> str | None:
    """Why grading must not start at ``level`` (described as ``isolation``); None if it may.

    ``several_untrusted``: more than one submission, and no ``--trust-submissions``."""
    why = refusal(level, required)
    if why is None and several_untrusted and level == "rlimits":
        why = (f"the isolation here is only {isolation}.\nAt this level student code runs as the grader's user: what "
               "one submission leaves (files, IPC objects, processes) could reach the next, so grade autograde "
               "grades one submission per run. Run it as root on Linux (namespaces), or pass --trust-submissions "
               "for code you trust.")
    return why
