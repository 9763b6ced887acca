"""``grade check --html``: the student's feedback page, the same page ``grade autograde`` writes per submission."""
from __future__ import annotations

from pathlib import Path

from autograder.pages import cards, feedback_page


def write_page(results, folder: Path, dest: Path) -> Path:
    """Write the page for ``grade check``'s ``results`` of ``folder`` to ``dest``; return its absolute path."""
    step_cards = cards.from_check(results)
    score = sum(r.points for r in results)
    top = sum(r.max_points for r in results)
    lines = [f"Public checks of {folder}: {score:g} / {top:g}",
             "The hidden grading adds randomized cases and more counts; these are the course documents' own inputs."]
    pictures = feedback_page.draw_pictures(step_cards)  # Pillow only if a public case fails
    return feedback_page.write(dest, step_cards, pictures, "grade check: your feedback", lines).resolve()
