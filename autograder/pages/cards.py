"""One card per step, with its counts: built from a results.json or from ``grade check``'s results, so that a
page says the same words whichever command wrote it."""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder.grading.verdict import BLOCKED, FAILED, NOT_ATTEMPTED, PASSED, step_status

from . import misconceptions

__all__ = ["BLOCKED", "FAILED", "NOT_ATTEMPTED", "PASSED", "CountCard", "StepCard"]


@dataclass
class CountCard:
    count: str
    status: str
    points: float
    max_points: float
    public: bool
    text: str = ""  # the feedback, as results.json and grade check word it
    evidence: dict | None = None  # evidence.collect's record of the failing case
    number: str = ""  # the test's number in results.json (1.2): how a picture is found again

    @property
    def likely(self) -> list[str]:
        return misconceptions.hints(self.text) if self.status != PASSED else []


@dataclass
class StepCard:
    step: str
    title: str
    counts: list[CountCard] = field(default_factory=list)
    blocked_by: str | None = None
    printed: str = ""
    #: the hidden counts left off this card (Gradescope's always-visible output): (how many, their points)
    hidden_left_out: tuple[int, float] = (0, 0.0)

    def points_words(self) -> str:
        """"2/3 points", and which of them are public: the page and Gradescope's output say the same numbers."""
        public = [c for c in self.counts if c.public]
        hidden = [c for c in self.counts if not c.public]
        n, top = self.hidden_left_out
        if n:
            return (f"{self.points:g}/{self.max_points:g} points on its public counts; its {n} hidden count(s) "
                    f"({top:g} point(s)) are shown with the tests once grades are published")
        if public and hidden:
            return (f"{self.points:g}/{self.max_points:g} points ({sum(c.points for c in public):g}/"
                    f"{sum(c.max_points for c in public):g} on its public counts, {sum(c.points for c in hidden):g}/"
                    f"{sum(c.max_points for c in hidden):g} on its hidden ones)")
        return f"{self.points:g}/{self.max_points:g} points" + (" (its counts are hidden ones)" if hidden else "")

    @property
    def points(self) -> float:
        return sum(c.points for c in self.counts)

    @property
    def max_points(self) -> float:
        return sum(c.max_points for c in self.counts)

    @property
    def status(self) -> str:
        return step_status({c.status for c in self.counts}, bool(self.blocked_by))

    @property
    def likely(self) -> list[str]:
        found: list[str] = []
        for c in self.counts:
            found += [h for h in c.likely if h not in found]
        return found


def failure_text(step: str, count: str, case: str, status: str, lines: list[str]) -> str:
    """A failing count's feedback, worded as the hidden suites' StepFailure words it."""
    return "\n".join([f"{step} [{count}] case {case!r}: {status}", *("  " + line for line in lines)])


def from_results(result: dict, evidence: dict | None = None) -> list[StepCard]:
    """Cards from a results.json (``tests[]``); ``evidence``: (step, count) -> evidence.collect's record."""
    cards: dict[str, StepCard] = {}
    for test in result.get("tests", []):
        head, _, title = test.get("name", "").partition(": ")
        step, _, count = head.partition(" ")
        tags = test.get("tags") or []
        status = NOT_ATTEMPTED if NOT_ATTEMPTED in tags else test.get("status") or FAILED
        card = cards.setdefault(step, StepCard(step, title))
        card.counts.append(CountCard(count, status, float(test.get("score", 0)), float(test.get("max_score", 0)),
                                     test.get("visibility") == "visible", test.get("output", ""),
                                     (evidence or {}).get((step, count)), str(test.get("number") or "")))
    return list(cards.values())


def from_check(results) -> list[StepCard]:
    """Cards from ``grade check``'s StepResults (public counts only)."""
    cards = []
    for r in results:
        card = StepCard(r.step, r.title, blocked_by=r.blocked_by, printed=r.printed if r.status == FAILED else "")
        for c in r.counts:
            text = failure_text(r.step, c.count, c.case, c.status, c.feedback) if c.status != PASSED else ""
            card.counts.append(CountCard(c.count, c.status, c.points, c.max_points, True, text,
                                         getattr(c, "evidence", None), f"{r.step} {c.count}"))
        cards.append(card)
    return cards
