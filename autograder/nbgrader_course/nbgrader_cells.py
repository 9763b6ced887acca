"""nbformat cells carrying nbgrader's cell metadata (schema version 3).

nbgrader knows a cell by its ``grade_id``, which must be unique within a notebook; ``cell_type`` is
recorded so that nbgrader warns when a student changes a cell's type. Solution cells are what students
edit; locked cells (read-only and test cells) are put back from the course's database when nbgrader
autogrades, whatever a student did to them.
"""
from __future__ import annotations

import re

from .notebook_format import nbformat

v4 = nbformat.v4

SCHEMA_VERSION = 3
_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _cell_id(grade_id: str) -> str:
    """A notebook cell id (nbformat 4.5: 1-64 of [A-Za-z0-9_-]) derived from the grade id."""
    return _ID_CHARS.sub("-", grade_id)[:64]


def _meta(cell_type: str, grade_id: str, *, grade: bool, solution: bool, locked: bool,
          points: float | None = None) -> dict:
    meta = {"grade": grade, "solution": solution, "locked": locked, "grade_id": grade_id,
            "schema_version": SCHEMA_VERSION, "cell_type": cell_type}
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def markdown(text: str, cell_id: str) -> dict:
    """Explanation: a plain markdown cell, outside nbgrader's bookkeeping."""
    return v4.new_markdown_cell(text, id=_cell_id(cell_id))


def read_only(source: str, grade_id: str) -> dict:
    """Code every notebook needs (setup, the checking helper): locked, restored when graded."""
    return v4.new_code_cell(source, id=_cell_id(grade_id),
                            metadata=_meta("code", grade_id, grade=False, solution=False, locked=True))


def solution(source: str, grade_id: str) -> dict:
    """The student's answer: the reference code with its body between the solution markers."""
    return v4.new_code_cell(source, id=_cell_id(grade_id),
                            metadata=_meta("code", grade_id, grade=False, solution=True, locked=False))


def test(source: str, grade_id: str, points: float) -> dict:
    """A graded, locked test cell: its points when it runs without an error, else zero."""
    return v4.new_code_cell(source, id=_cell_id(grade_id),
                            metadata=_meta("code", grade_id, grade=True, solution=False, locked=True, points=points))
