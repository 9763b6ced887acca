"""The check behind ``grade autograde --require-isolation``.

The levels are ``worker/isolation.Level``: ``namespaces`` > ``uid+rlimits`` > ``rlimits`` (docs/isolation.md).
The zygote finds its level at start-up (``Zygote.level``); a grader asked for at least a level refuses to grade below it, and at
``rlimits`` it grades several submissions only for code the instructor trusts. Both the local executor and
every Dask worker ask it, through the run's one ``RunPolicy``, so the rules are written once.
"""
from __future__ import annotations

from dataclasses import dataclass

from autograder.worker.isolation import Level


def refusal(level: Level, required: Level | None) -> str | None:
    """Why grading must not start at ``level`` when at least ``required`` was asked; None if it may."""
    if required is None or Level(level).at_least(required):
        return None
    return (f"the isolation here is {level}, below the required {required} (--require-isolation): "
            "nothing was graded at this level. Run the grader as root on Linux for namespaces "
            "(docs/isolation.md), or lower --require-isolation.")


def may_grade(level: Level, isolation: str, required: Level | None, several_untrusted: bool) -> str | None:
    """Why grading must not start at ``level`` (described as ``isolation``); None if it may.

    ``several_untrusted``: more than one submission, and no ``--trust-submissions``."""
    why = refusal(level, required)
    if why is None and several_untrusted and level == Level.RLIMITS:
        why = (f"the isolation here is only {isolation}.\nAt this level student code runs as the grader's user: what "
               "one submission leaves (files, IPC objects, processes) could reach the next, so grade autograde "
               "grades one submission per run. Run it as root on Linux (namespaces), or pass --trust-submissions "
               "for code you trust.")
    return why


@dataclass(frozen=True)
class RunPolicy:
    """What a run of ``grade autograde`` may grade at, decided once from its options and submissions.

    Built once per run and handed to whichever executor grades it: the local batch checks it against its
    zygote before any job is forked; with Dask it travels in every task (``cluster/payload.py``) and each
    worker checks it against its own zygote."""

    require: Level | None = None  # --require-isolation: the lowest level to grade at
    several_untrusted: bool = False  # more than one submission and no --trust-submissions: refuse level rlimits

    def refusal(self, level: Level, isolation: str) -> str | None:
        """Why grading must not start at ``level`` (described as ``isolation``); None if it may."""
        return may_grade(level, isolation, self.require, self.several_untrusted)
