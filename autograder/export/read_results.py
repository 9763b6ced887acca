"""Read ``DIR/<submission name>/results.json`` as written by ``grade autograde`` (Gradescope's format), with the
decision a person recorded beside it (``decision.json``: outputs/decision.py)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from autograder.outputs import decision as decisions
from autograder.outputs.results import ResultsError, read

from . import ungraded


@dataclass(frozen=True)
class Submission:
    name: str                       # the folder name: identifies the student
    score: float | None             # results.json's top-level score; None: no results.json, a decision alone
    max_score: float | None         # sum of tests[].max_score, None when there are no tests
    submitted_at: datetime | None   # extra_data.submitted_at; None when unknown (older results.json)
    path: Path
    #: why the kit never gave its score (export/ungraded.py); empty when it graded the hand-in
    ungraded: tuple[str, ...] = ()
    #: what a person recorded (outputs/decision.py): used in place of the kit's score
    decision: decisions.Decision | None = None
    submission_hash: str | None = None

    @property
    def changed_since_decision(self) -> bool:
        """The hand-in graded now is not the one the decision was recorded for."""
        d = self.decision
        return bool(d and d.submission_hash and self.submission_hash and d.submission_hash != self.submission_hash)


@dataclass(frozen=True)
class Unreadable:
    name: str
    path: Path
    reason: str


def read_one(folder: Path) -> Submission | Unreadable:
    path = folder / "results.json"
    try:
        decision = decisions.read(folder)
    except decisions.DecisionError as exc:
        return Unreadable(folder.name, decisions.path(folder), str(exc))
    try:
        results = read(path)
    except ResultsError as exc:
        if decision is not None and not path.exists():  # a student who handed nothing in, decided by a person
            return Submission(folder.name, None, None, None, decisions.path(folder), decision=decision)
        return Unreadable(folder.name, path, str(exc))
    return Submission(folder.name, results.score, results.max_score, results.extra_data.submitted_time, path,
                      tuple(ungraded.reasons(results)), decision, results.extra_data.submission_hash)


def read_dir(results_dir: Path) -> tuple[list[Submission], list[Unreadable]]:
    """Every submission folder of ``results_dir`` (hidden folders skipped), in name order."""
    found: list[Submission] = []
    problems: list[Unreadable] = []
    for folder in sorted(p for p in results_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        item = read_one(folder)
        (found if isinstance(item, Submission) else problems).append(item)
    return found, problems
