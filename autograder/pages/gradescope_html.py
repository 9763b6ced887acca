"""The feedback page in results.json, as Gradescope shows it: ``output_format: "html"``.

Gradescope's results spec lets the top-level ``output`` be HTML (``output_format``) while each test's
``output`` stays text (``test_output_format: "text"``), so every reader of a test's words (the nbgrader
notebooks, ``grade export``, the leak scans) reads them unchanged. The top-level output is always
visible, so it carries only the visible (public) counts: a hidden count shows in its own test, once
grades are published. Pictures are embedded as data URIs, within ``MAX_BYTES`` for the whole file.
"""
from __future__ import annotations

import base64
import json
import re
from dataclasses import replace

from . import feedback_page
from .cards import StepOutcome

MAX_BYTES = 1_000_000  # per submission, the whole results.json
_IMG = re.compile(r'<img data-test="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def visible_cards(cards: list[StepOutcome]) -> list[StepOutcome]:
    shown = []
    for card in cards:
        counts = [c for c in card.counts if c.public]
        if counts:
            hidden = [c for c in card.counts if not c.public]
            shown.append(replace(card, counts=tuple(counts),
                                 hidden_left_out=(len(hidden), sum(c.max_points for c in hidden))))
    return shown


def embed(result: dict, cards: list[StepOutcome], pictures: dict, heading: str = "Your feedback") -> dict:
    """``result`` with its output as the page's HTML body (its summary lines kept, in the page)."""
    lines = (result.get("output") or "").splitlines()
    shown = visible_cards(cards)
    hidden = sum(len(card.counts) for card in cards) - sum(len(card.counts) for card in shown)
    if hidden:
        lines.append(f"{hidden} hidden count(s) are listed with the tests, once grades are published.")
    for pics in (pictures, {}):
        html = feedback_page.body(shown, pics, heading, lines, public_only=bool(hidden))
        candidate = {**result, "output": html, "output_format": "html", "test_output_format": "text"}
        if len(json.dumps(candidate, indent=2)) < MAX_BYTES:
            return candidate
    return {**result, "output": "\n".join(lines), "output_format": "text"}


def pictures(result: dict) -> dict[str, bytes]:
    """Test name -> the PNG that results.json's HTML output shows for it (for the nbgrader notebooks)."""
    if result.get("output_format") != "html":
        return {}
    names = {str(t.get("number")): t.get("name") for t in result.get("tests", [])}
    found = {}
    for number, data in _IMG.findall(result.get("output") or ""):
        if number in names:
            found[names[number]] = base64.b64decode(data)
    return found
