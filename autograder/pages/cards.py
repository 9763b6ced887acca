"""One card per step, with its counts: the step's outcome (``autograder/outputs/outcomes.py``), built from a
results.json and its counts' outcomes or from ``grade check``'s, so that a page says the same words whichever
command wrote it."""
from __future__ import annotations

from dataclasses import replace

from autograder.outputs.outcomes import CountOutcome, StepOutcome
from autograder.outputs.verdict import BLOCKED, FAILED, NOT_ATTEMPTED, PASSED

from . import misconceptions

__all__ = ["BLOCKED", "FAILED", "NOT_ATTEMPTED", "PASSED", "CountOutcome", "StepOutcome"]


def points_words(card: StepOutcome) -> str:
    """"2/3 points", and which of them are public: the page and Gradescope's output say the same numbers."""
    public = [c for c in card.counts if c.public]
    hidden = [c for c in card.counts if not c.public]
    n, top = card.hidden_left_out
    if n:
        return (f"{card.points:g}/{card.max_points:g} points on its public counts; its {n} hidden count(s) "
                f"({top:g} point(s)) are shown with the tests once grades are published")
    if public and hidden:
        return (f"{card.points:g}/{card.max_points:g} points ({sum(c.points for c in public):g}/"
                f"{sum(c.max_points for c in public):g} on its public counts, {sum(c.points for c in hidden):g}/"
                f"{sum(c.max_points for c in hidden):g} on its hidden ones)")
    return f"{card.points:g}/{card.max_points:g} points" + (" (its counts are hidden ones)" if hidden else "")


def from_results(result: dict, outcomes: dict | None = None) -> list[StepOutcome]:
    """Cards from a results.json (``tests[]``: the words, points and numbers as graded) and, when the grader
    has them, each count's outcome (``outcomes``: (step, count) -> CountOutcome): its failing case's evidence and
    its hints. The misconception ids are the tests' ``tags``."""
    cards: dict[str, StepOutcome] = {}
    counts: dict[str, list[CountOutcome]] = {}
    for test in result.get("tests", []):
        head, _, title = test.get("name", "").partition(": ")
        step, _, count = head.partition(" ")
        tags = test.get("tags") or []
        status = NOT_ATTEMPTED if NOT_ATTEMPTED in tags else test.get("status") or FAILED
        graded = (outcomes or {}).get((step, count))
        cards.setdefault(step, StepOutcome(step, title))
        counts.setdefault(step, []).append(CountOutcome(
            step, count, status, test.get("output", ""), float(test.get("score", 0)), float(test.get("max_score", 0)),
            test.get("visibility") == "visible", evidence=graded.evidence if graded else None,
            misconceptions=tuple(misconceptions.from_tags(tags)), likely=graded.likely if graded else (),
            number=str(test.get("number") or "")))
    return [replace(card, counts=tuple(counts[step])) for step, card in cards.items()]


def from_check(results: list[StepOutcome]) -> list[StepOutcome]:
    """Cards from ``grade check``'s outcomes (public counts only): what the code printed only where it failed."""
    return [replace(r, printed=r.printed if r.status == FAILED else "") for r in results]
