"""Misconception ids on the pages: ``misconception:<id>`` tags, the class counts and their labels.

The ids are given where a misconception is diagnosed (``autograder/feedback/catalogue.py``: each "likely:"
line carries its id) and travel with the outcome to the tags; nothing here reads them back out of the
feedback's words. The dashboard names an id in the catalogue's words, the ones the student read.
"""
from __future__ import annotations

from autograder.feedback.catalogue import MISCONCEPTIONS, WORDS_TO_ID, words_of


def label(mid: str) -> str:
    """How the dashboard names an id: the words the feedback uses for it (a student's own names in them made
    generic), else the id's own words."""
    if mid in MISCONCEPTIONS:
        return words_of(mid)
    words = [w for w, i in WORDS_TO_ID.items() if i == mid]
    return words[0] if words else mid.replace("-", " ")


def tags(ids: list[str]) -> list[str]:
    return [f"misconception:{mid}" for mid in dict.fromkeys(ids)]


def from_tags(tags: list[str]) -> list[str]:
    return [t.split(":", 1)[1] for t in tags if t.startswith("misconception:")]
