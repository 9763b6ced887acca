"""``grade check``'s results as a notebook shows them: the same table, words and pictures, as text and as HTML.

The text is ``printout.table`` and ``printout.details``, as the terminal prints them. The HTML holds that text
in a ``<pre>``, then the feedback page's cards of the failing steps with their heatmaps (inline PNG, no
script): what ``grade check --html`` writes, without the page's own style sheet, so the notebook's is left
alone (as on Gradescope, ``pages/gradescope_html.py``).
"""
from __future__ import annotations

from html import escape

from autograder.outputs.verdict import PASSED
from autograder.pages import cards, feedback_page

from . import printout

PASSED_WORDS = "public checks passed; hidden cases are graded later"


def verdict(results) -> str:
    score, top = sum(r.points for r in results), sum(r.max_points for r in results)
    if results and all(r.status == PASSED for r in results):
        return f"{PASSED_WORDS} ({score:g}/{top:g})"
    fixing = sum(r.status != PASSED for r in results)
    return f"public checks: {score:g}/{top:g}; {fixing} step(s) to fix (hidden cases are graded later)"


def text(results, said: str, notes: list[str] | tuple = ()) -> str:
    details = printout.details(results, notes=notes)
    return "\n".join([said, "", printout.table(results, color=False)] + ([details] if details else [])
                     + ["", verdict(results)])


def html(results, said: str, notes: list[str] | tuple = ()) -> str:
    failing = [c for c in cards.from_check(results) if c.status != PASSED]
    pictures = feedback_page.draw_pictures(failing)  # Pillow only when a public case fails
    details = printout.details(results, notes=notes)
    out = [f"<div class=\"attention-check\"><p>{escape(said)}</p>",
           f"<p><strong>{escape(verdict(results))}</strong></p>",
           "<pre>" + escape(printout.table(results, color=False) + ("\n" + details if details else "")) + "</pre>"]
    if failing:
        out.append(feedback_page.body(failing, pictures, "What to fix", []))
    out.append("</div>")
    return "\n".join(out)
