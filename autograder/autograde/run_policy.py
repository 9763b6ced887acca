"""The check behind ``grade autograde --require-isolation``, and whether untrusted code may be graded here at all.

The levels are ``worker/isolation.Level``, strongest first ``namespaces``, ``userns``, ``uid+landlock``, ``landlock``,
``uid+rlimits``, ``rlimits`` (docs/isolation.md). The zygote finds its level at start-up (``Zygote.level``); a grader
asked for at least a level refuses to grade below it. Untrusted code (no ``--trust-submissions``) is graded at every
level that keeps it from the instructor's files, the user's and the other submissions': all but ``rlimits``, and
``uid+rlimits`` only where a worker's uid can read none of the instructor's files (``autograde/reach.py``). Both the
local executor and every Dask worker ask it, through the run's one ``RunPolicy``, so the rules are written once.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.autograde import reach
from autograder.sandbox.zygote import site_dirs
from autograder.worker.confine import allow_list
from autograder.worker.isolation import Level


def refusal(level: Level, required: Level | None) -> str | None:
    """Why grading must not start at ``level`` when at least ``required`` was asked; None if it may."""
    if required is None or Level(level).at_least(required):
        return None
    return (f"the isolation here is {level}, below the required {required} (--require-isolation): "
            "nothing was graded at this level. Run the grader as root on Linux for namespaces, or as a user where "
            "unprivileged user namespaces or Landlock are allowed (docs/isolation.md), or lower --require-isolation.")


def may_grade(level: Level, isolation: str, required: Level | None, untrusted: bool) -> str | None:
    """Why grading must not start at ``level`` (described as ``isolation``); None if it may.

    ``untrusted``: no ``--trust-submissions``."""
    why = refusal(level, required)
    if why is None and untrusted and level == Level.RLIMITS:
        why = (f"the isolation here is only {isolation}.\nAt this level student code runs as you, with nothing between "
               "it and your files: it could read the reference solutions, and what one submission leaves could reach "
               "the next. Grade as root, or where unprivileged user namespaces or Landlock (ABI 6, Linux 6.12) are "
               "allowed (docs/isolation.md), or pass --trust-submissions for code you trust.")
    return why


@dataclass(frozen=True)
class RunPolicy:
    """What a run of ``grade autograde`` may grade at, decided once from its options and submissions.

    Built once per run and handed to whichever executor grades it: the local batch checks it against its
    zygote before any job is forked; with Dask it travels in every task (``cluster/payload.py``) and each
    worker checks it against its own zygote."""

    require: Level | None = None  # --require-isolation: the lowest level to grade at
    #: no --trust-submissions: refuse rlimits, and uid+rlimits where the instructor's files are readable
    untrusted: bool = False
    #: (path, what) of the class's hand-ins (when there are several) and the results folder: the instructor's too
    protected: tuple[tuple[str, str], ...] = ()

    def refusal(self, level: Level, isolation: str) -> str | None:
        """Why grading must not start at ``level`` (described as ``isolation``); None if it may."""
        return may_grade(level, isolation, self.require, self.untrusted)

    def files_refusal(self, zygote, grader, staging: Path | None) -> str | None:
        """Why untrusted code must not be graded with ``zygote`` where the instructor's files are (``grader``'s course,
        ``staging``, ``protected``): a worker's uid could read some of them; None if it may."""
        if not self.untrusted:
            return None
        roots = reach.protected(grader, staging, self.protected)
        why = reach.refusal(zygote.level, zygote.uid_base, roots, allow_list(site_dirs()))
        return why and f"at {zygote.level}, {why}."
