"""nbgrader's automatic comment on a solution cell, as its own autograde leaves it, for the kit's write-back.

``nbgrader autograde`` comments "No response." on each solution cell a student handed in untouched, and nothing on
one they answered (``SaveAutoGrades._add_comment``: the cell's checksum is still the released cell's). The
formgrader shows it above the answer. The kit writes the same comment for the same notebooks. A solution cell is
untouched when its source is the one nbgrader saved as released (``SourceCell``, saved by ``generate_assignment`` once
the solutions were cleared). A cell the student's notebook does not have (no such ``grade_id``) gets no comment,
and an earlier one is left as it was, as nbgrader's autograde leaves it.
"""
from __future__ import annotations

from pathlib import Path

from .autograded import solution_sources

NO_RESPONSE = "No response."


def released(gb, assignment_id: str) -> dict[tuple[str, str], str]:
    """(notebook, cell name) -> the released source of each solution cell of the assignment, in one query."""
    from nbgrader.api import Notebook, SolutionCell, SourceCell

    rows = gb.db.query(Notebook.name, SourceCell.name, SourceCell.source) \
        .join(SourceCell, SourceCell.notebook_id == Notebook.id) \
        .join(SolutionCell, (SolutionCell.notebook_id == Notebook.id) & (SolutionCell.name == SourceCell.name)) \
        .filter(Notebook.assignment_id == assignment_id)
    return {(notebook, cell): source or "" for notebook, cell, source in rows}


def comments(folder: Path | None, sources: dict[tuple[str, str], str]) -> dict[tuple[str, str], str | None]:
    """(notebook, cell name) -> the auto comment of each solution cell found in the notebooks of ``folder`` (a student's
    submission): "No response." where its source is the released one (``sources``), else None."""
    if folder is None:
        return {}
    found: dict[tuple[str, str], str | None] = {}
    for notebook in sorted({nb for nb, _ in sources}):
        handed_in = solution_sources(Path(folder) / f"{notebook}.ipynb")
        for (nb, cell), source in sources.items():
            if nb == notebook and cell in handed_in:
                found[(nb, cell)] = NO_RESPONSE if handed_in[cell] == source else None
    return found
