"""Match submissions to the roster and compute each student's final score under the late policy."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from autograder.course.schema import LatePolicy

from .late_policy import Lateness, assess
from .read_results import Submission, Unreadable
from .roster import RosterIndex, Student

NO_SUBMISSION = "no_submission"
UNREADABLE = "unreadable"
NOT_GRADED = "not_graded"    # the kit never gave its score (export/ungraded.py) and no person decided: left blank
EXCUSED = "excused"          # a person excused it (decision.json): left blank, or Canvas's EX


@dataclass
class Entry:
    """One roster student's line in the export."""
    student: Student
    submission: Submission | None = None
    lateness: Lateness | None = None
    unreadable: Unreadable | None = None
    #: ``--ungraded zero``: a hand-in the kit never graded is exported with the kit's score (0 for what it could
    #: not grade) instead of left blank
    zero_ungraded: bool = False

    @property
    def decision(self):
        """What a person recorded for the submission (outputs/decision.py), or None."""
        return self.submission.decision if self.submission is not None else None

    @property
    def excused(self) -> bool:
        return self.decision is not None and self.decision.excused

    @property
    def withheld(self) -> bool:
        """The kit's score is not exported: it never gave it, no person decided, and zeros were not asked for."""
        sub = self.submission
        return sub is not None and sub.decision is None and bool(sub.ungraded) and not self.zero_ungraded

    @property
    def raw(self) -> float | None:
        """The score before the late policy: a person's decision, else the kit's."""
        if self.submission is None or self.excused:
            return None
        return self.decision.score if self.decision is not None else self.submission.score

    @property
    def status(self) -> str:
        if self.submission is not None:
            return EXCUSED if self.excused else NOT_GRADED if self.withheld else self.lateness.status
        return UNREADABLE if self.unreadable is not None else NO_SUBMISSION

    @property
    def final(self) -> float | None:
        """Raw score minus the late penalty; None when there is nothing to export (no submission, excused, never
        graded by the kit and not decided)."""
        if self.submission is None or self.excused or self.withheld or self.raw is None:
            return None
        return self.lateness.apply(self.raw)


@dataclass
class Gradebook:
    max_points: float
    entries: list[Entry]                                   # roster order
    unknown: list[Submission | Unreadable] = field(default_factory=list)   # not on the roster
    ambiguous: list[tuple[str, list[Student]]] = field(default_factory=list)
    duplicates: list[tuple[Student, list[str], str]] = field(default_factory=list)  # student, names, kept
    unreadable: list[Unreadable] = field(default_factory=list)
    max_mismatch: list[Submission] = field(default_factory=list)

    @property
    def graded(self) -> list[Entry]:
        """The entries exported with a grade."""
        return [e for e in self.entries if e.final is not None]

    @property
    def handed_in(self) -> list[Entry]:
        """The entries with a submission (graded or not, decided or not)."""
        return [e for e in self.entries if e.submission is not None]

    @property
    def not_graded(self) -> list[Entry]:
        """Submissions the kit never graded, with no decision: blank unless ``--ungraded zero``."""
        return [e for e in self.entries if e.submission is not None and e.submission.ungraded and e.decision is None]

    @property
    def decided(self) -> list[Entry]:
        return [e for e in self.entries if e.decision is not None]

    @property
    def missing(self) -> list[Entry]:
        return [e for e in self.entries if e.submission is None]


def _latest_first(sub: Submission) -> tuple:
    return (sub.submitted_at or datetime.min.replace(tzinfo=timezone.utc), sub.name)


def build(students: list[Student], submissions: list[Submission], unreadable: list[Unreadable],
          policy: LatePolicy | None, max_points: float, ungraded: str = "blank") -> Gradebook:
    """``ungraded``: ``blank`` (a hand-in the kit never graded gets no grade) or ``zero`` (its score, 0 for what
    was not graded)."""
    index = RosterIndex(students)
    book = Gradebook(max_points, [Entry(s, zero_ungraded=ungraded == "zero") for s in students],
                     unreadable=list(unreadable))
    by_student = {id(e.student): e for e in book.entries}
    claimed: dict[int, list[Submission]] = {}
    for item in [*submissions, *unreadable]:
        matches = index.lookup(item.name)
        if not matches:
            book.unknown.append(item)
        elif len(matches) > 1:
            book.ambiguous.append((item.name, matches))
        elif isinstance(item, Unreadable):
            by_student[id(matches[0])].unreadable = item
        else:
            claimed.setdefault(id(matches[0]), []).append(item)
    for key, subs in claimed.items():
        entry = by_student[key]
        subs.sort(key=_latest_first)
        kept = subs[-1]
        if len(subs) > 1:
            book.duplicates.append((entry.student, [s.name for s in subs], kept.name))
        entry.submission = kept
        entry.lateness = assess(policy, kept.submitted_at)
        if kept.max_score is not None and abs(kept.max_score - max_points) > 1e-9:
            book.max_mismatch.append(kept)
    return book
