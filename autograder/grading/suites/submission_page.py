"""A graded submission's feedback page: its cards and pictures, in results.json and in feedback.html."""
from __future__ import annotations

from pathlib import Path

from autograder.pages import cards as page_cards
from autograder.pages import feedback_page, gradescope_html


def cards_and_pictures(result: dict, outcomes: dict | None = None) -> tuple[list, dict]:
    """The step cards of ``result`` (with each failing case's evidence and hints from ``outcomes``: (step, count) ->
    CountOutcome) and their pictures."""
    cards = page_cards.from_results(result, outcomes)
    return cards, feedback_page.draw_pictures(cards)


def embed(result: dict, cards: list, pictures: dict) -> dict:
    """``result`` with its top-level output as Gradescope's HTML: the same page, visible counts only."""
    return gradescope_html.embed(result, cards, pictures)


def write_page(path: Path, name: str, cards: list, pictures: dict, lines: list[str]) -> Path:
    """``feedback.html`` for one submission (every count; hidden ones as the redaction rules allow)."""
    return feedback_page.write(path, cards, pictures, f"Feedback: {name}", [line for line in lines if line])
