"""Read ``DIR/<submission name>/results.json`` as written by ``grade autograde`` (Gradescope's format)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from autograder.outputs.results import ResultsError, read


@dataclass(frozen=True)
class Submission:
    name: str                       # the folder name: identifies the student
    score: float                    # results.json's top-level score
    max_score: float | None         # sum of tests[].max_score, None when there are no tests
    submitted_at: datetime | None   # extra_data.submitted_at; None when unknown (older results.json)
    path: Path


@dataclass(frozen=True)
class Unreadable:
    name: str
    path: Path
    reason: str


def read_one(folder: Path) -> Submission | Unreadable:
    path = folder / "results.json"
    try:
        results = read(path)
    except ResultsError as exc:
        return Unreadable(folder.name, path, str(exc))
    return Submission(folder.name, results.score, results.max_score, results.extra_data.submitted_time, path)


def read_dir(results_dir: Path) -> tuple[list[Submission], list[Unreadable]]:
    """Every submission folder of ``results_dir`` (hidden folders skipped), in name order."""
    found: list[Submission] = []
    problems: list[Unreadable] = []
    for folder in sorted(p for p in results_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        item = read_one(folder)
        (found if isinstance(item, Submission) else problems).append(item)
    return found, problems
