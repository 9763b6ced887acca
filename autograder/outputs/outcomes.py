"""A count's outcome and a step's: the one pair of values ``grade check``, the hidden suites (results.json,
Gradescope's output) and the feedback pages all speak.

``grade check`` builds them from the public cases (``autograder/check/run.py``), the hidden suites' plugin
from each count's test (``autograder/grading/suites/plugin.py``), the pages from a results.json and those
outcomes (``autograder/pages/cards.py``). A count carries the ids of the misconceptions its feedback names,
as diagnosed (``autograder/feedback/catalogue.py``), and the hint words the student reads with them: a
reader takes the ids from here or from results.json's ``tags``, never from the words.
"""
from __future__ import annotations

from dataclasses import dataclass

from autograder.feedback.catalogue import GENERIC, ids_of

from .verdict import PASSED, step_status


@dataclass(frozen=True)
class CountOutcome:
    step: str
    count: str
    status: str = PASSED
    #: the words, as results.json's test and the pages say them (a failing case: ``failure_text``)
    feedback: str = ""
    points: float = 0.0
    max_points: float = 0.0
    public: bool = True
    cases: int = 0  # the cases run
    case: str = ""  # the failing case's name
    #: the judge's lines for the failing case (what ``grade check`` prints under its own heading)
    lines: tuple[str, ...] = ()
    evidence: dict | None = None  # the failing case's arrays (public) or facts (hidden): grading/evidence.py
    #: the ids of the misconceptions its feedback names, as diagnosed (feedback/catalogue.py): its tags
    misconceptions: tuple[str, ...] = ()
    #: the hints of those misconceptions, in the words the student reads after "likely: "
    likely: tuple[str, ...] = ()
    import_error: str | None = None  # the module that did not import, when that is why it failed
    number: str = ""  # the test's number in results.json (1.2): how a picture is found again
    #: said to the student though the count passed (``Verdict.notes``): no point depends on them
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class StepOutcome:
    step: str
    title: str
    counts: tuple[CountOutcome, ...] = ()
    blocked_by: str | None = None  # the step it builds on that fails (fix that first; grade check)
    printed: str = ""  # what the student's code printed while this step was checked
    cell: str | None = None  # the notebook cell that defines it (``check/cells.py``), when checked from a notebook
    #: the hidden counts left off (Gradescope's always-visible output): (how many, their points)
    hidden_left_out: tuple[int, float] = (0, 0.0)

    @property
    def status(self) -> str:
        return step_status({c.status for c in self.counts}, bool(self.blocked_by))

    @property
    def points(self) -> float:
        return sum(c.points for c in self.counts)

    @property
    def max_points(self) -> float:
        return sum(c.max_points for c in self.counts)

    @property
    def import_error(self) -> str | None:
        return next((c.import_error for c in self.counts if c.import_error), None)

    @property
    def likely(self) -> list[str]:
        """The hints of its failing counts, the most specific first (a known mistake reproduced, an error or a warning
        recognised, before what values alone suggest), in their counts' order; a hint an earlier count gave is not
        repeated."""
        found: list[str] = []
        mids: list[str | None] = []
        for c in self.counts:
            if c.status != PASSED:
                named = c.misconceptions if len(c.misconceptions) == len(c.likely) else [None] * len(c.likely)
                for h, mid in zip(c.likely, named):
                    if h not in found:
                        found.append(h)
                        mids.append(mid)
        generic = [h for h, mid in zip(found, mids) if mid in GENERIC]
        return [h for h in found if h not in generic] + generic

    @property
    def misconceptions(self) -> list[str]:
        """The misconception ids of its failing counts, each once, in order."""
        return list(dict.fromkeys(m for c in self.counts if c.status != PASSED for m in c.misconceptions))


def failure_text(step: str, count: str, case: str, status: str, lines) -> str:
    """A failing case's feedback: its heading, then the judge's lines (``verdict.StepFailure`` words it)."""
    return "\n".join([f"{step} [{count}] case {case!r}: {status}", *("  " + line for line in lines)])


def hints_of(lines) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(ids, hint words) of a judge's "likely: " lines (``feedback.catalogue.Likely``, each knowing its id): each
    id once, the words as the lines say them."""
    likely = [line for line in lines if getattr(line, "mid", None) and str(line).startswith("likely: ")]
    return tuple(ids_of(likely)), tuple(str(line).removeprefix("likely: ").strip() for line in likely)
