"""Read ``DIR/<submission name>/results.json`` as written by ``grade autograde`` (Gradescope's format)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


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


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_one(folder: Path) -> Submission | Unreadable:
    path = folder / "results.json"
    name = folder.name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Unreadable(name, path, "no results.json in this folder")
    except (OSError, UnicodeDecodeError) as exc:
        return Unreadable(name, path, f"cannot read it ({exc})")
    except json.JSONDecodeError as exc:
        return Unreadable(name, path, f"not valid JSON (line {exc.lineno}: {exc.msg})")
    if not isinstance(data, dict):
        return Unreadable(name, path, "not a JSON object")
    score = data.get("score")
    if not _number(score):
        return Unreadable(name, path, f"no numeric top-level 'score' (got {score!r})")
    tests = data.get("tests")
    max_score = None
    if isinstance(tests, list) and tests:
        maxes = [t.get("max_score") for t in tests if isinstance(t, dict)]
        if len(maxes) != len(tests) or not all(_number(m) for m in maxes):
            return Unreadable(name, path, "a test in 'tests' has no numeric 'max_score'")
        max_score = float(sum(maxes))
    extra = data.get("extra_data")
    stamp = extra.get("submitted_at") if isinstance(extra, dict) else None
    submitted_at = None
    if stamp is not None:
        try:
            submitted_at = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        except ValueError:
            return Unreadable(name, path, f"extra_data.submitted_at is not an ISO-8601 date and time ({stamp!r})")
        if submitted_at.tzinfo is None:
            return Unreadable(name, path, f"extra_data.submitted_at has no UTC offset ({stamp!r}): "
                                          "cannot tell whether it was late")
    return Submission(name, float(score), max_score, submitted_at, path)


def read_dir(results_dir: Path) -> tuple[list[Submission], list[Unreadable]]:
    """Every submission folder of ``results_dir`` (hidden folders skipped), in name order."""
    found: list[Submission] = []
    problems: list[Unreadable] = []
    for folder in sorted(p for p in results_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        item = read_one(folder)
        (found if isinstance(item, Submission) else problems).append(item)
    return found, problems
