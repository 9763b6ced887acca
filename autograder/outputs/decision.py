"""A person's decision on one hand-in: ``decision.json``, beside its results.json.

Where the kit could not grade a hand-in (a corrupt archive, an empty folder, a broken notebook, a module it could not
read) or a person judges otherwise, the instructor records a score or an excuse, with the reason (``grade decide``),
as nbgrader's formgrader keeps a manual grade and Gradescope a manual adjustment. ``grade export`` and ``grade lti
push`` use it in place of the kit's score; ``grade autograde`` never writes nor removes it, so a regrade (``--force``,
a new grader) keeps it; the class summary shows it. A decision may stand alone, for a student who handed nothing in
(an excuse). tests/integration/test_decisions.py.

The file::

    {"score": 70.0, "excused": false, "reason": "emailed the right zip on time", "by": "alice", "at": "2026-...",
     "submission_hash": "..."}

``score`` is in the course's points (course.yml), before the late policy, as the kit's own score is; ``excused``
marks the hand-in excused (``score`` then null); ``submission_hash`` is the hand-in's results.json's when the decision
was recorded, so a later, different hand-in under the same name is said to have changed since.
"""
from __future__ import annotations

import getpass
import json
import math
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import atomic_file

FILE = "decision.json"


class DecisionError(ValueError):
    """A decision.json that cannot be used, or a decision that cannot be recorded; the message says why."""


@dataclass(frozen=True)
class Decision:
    score: float | None  # in the course's points, before the late policy; None when excused
    excused: bool
    reason: str
    by: str = ""
    at: str = ""
    submission_hash: str | None = None

    def words(self, points: float | None = None) -> str:
        """``excused (medical note)`` or ``70/81 recorded by a person (emailed the right zip)``."""
        said = f" ({self.reason})" if self.reason else ""
        if self.excused:
            return f"excused by a person{said}"
        top = f"/{points:g}" if points is not None else ""
        return f"{self.score:g}{top} recorded by a person{said}"


def path(folder: Path) -> Path:
    return Path(folder) / FILE


def read(folder: Path) -> Decision | None:
    """The decision recorded in ``folder``, or None; DecisionError when the file is there but unusable."""
    where = path(folder)
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DecisionError(f"{where}: cannot be read ({exc})") from None
    if not isinstance(data, dict):
        raise DecisionError(f"{where}: not a JSON object")
    excused, score = data.get("excused") is True, data.get("score")
    if excused:
        score = None
    elif isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) or score < 0:
        raise DecisionError(f"{where}: no score (a number, 0 or more) and not excused")
    text = {k: data.get(k) if isinstance(data.get(k), str) else "" for k in ("reason", "by", "at")}
    digest = data.get("submission_hash") if isinstance(data.get("submission_hash"), str) else None
    return Decision(None if score is None else float(score), excused, **text, submission_hash=digest)


def record(folder: Path, score: float | None, excused: bool, reason: str, submission_hash: str | None) -> Decision:
    """Write ``folder``/decision.json (atomically) and return it."""
    if excused == (score is not None):
        raise DecisionError("give a score or --excuse, one of them")
    if score is not None and (not math.isfinite(score) or score < 0):
        raise DecisionError(f"--score {score:g}: a number of points, 0 or more")
    decision = Decision(None if score is None else float(score), excused, reason.strip(), _who(),
                        datetime.now(timezone.utc).isoformat(timespec="seconds"), submission_hash)
    Path(folder).mkdir(parents=True, exist_ok=True)
    atomic_file.write_text(path(folder), json.dumps(asdict(decision), indent=2) + "\n", durable=True)
    return decision


def _who() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""
