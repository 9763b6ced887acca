"""The notebooks of ``autograded/<student>/<assignment>/``: built by the kit, from the course's own notebooks.

``nbgrader generate_feedback`` and the formgrader render these notebooks as HTML for the instructor, and
``nbgrader release_feedback`` hands that HTML to the students. A submitted notebook is untrusted: stored
outputs (``<script>``, ``application/javascript``, a fake "passed" under a cell whose nbgrader metadata was
removed), markdown HTML, attachments and metadata (the notebook's ``widgets`` state loads scripts) all
render in that HTML. So no part of a submitted notebook reaches it but the text of the answers:

- each notebook is the course's master copy, ``source/<assignment>/<module>.ipynb`` as ``grade nbgrader``
  wrote it (``release/<assignment>/`` where there is no source), with its metadata, cells and cell ids;
- each solution cell holds the source text of the student's solution cell with the same ``grade_id``
  (else the cell at the same place, when the notebook still has the master's cells), nothing else of it:
  never the master's reference code; a markdown answer is shown as text, in a fenced block;
- the hidden tests are taken out of the test cells (the feedback goes to students);
- every output is cleared, and each test cell shows the kit's verdict (``verdict_outputs``).
"""
from __future__ import annotations

import base64
import collections
import functools
import json
import re
from pathlib import Path

from .notebook_format import nbformat
from nbformat import from_dict
from nbformat.notebooknode import NotebookNode

from autograder.intake import hand_in_sizes

from . import notebook_text
from .graded_cells import BEGIN_HIDDEN, END_HIDDEN

#: what a solution cell shows when the notebook handed in has no answer for it
NO_ANSWER = {"code": "# (no answer: the notebook handed in has no cell for this answer)",
             "markdown": "*(no answer: the notebook handed in has no cell for this answer)*"}


def master_notebooks(course_dir: Path, assignment: str) -> dict[str, Path]:
    """notebook name -> the master copy: ``source/<assignment>/``, else ``release/<assignment>/``."""
    for kind in ("source", "release"):
        folder = Path(course_dir) / kind / assignment
        found = {p.stem: p for p in sorted(folder.glob("*.ipynb")) if p.is_file() and not p.is_symlink()}
        if found:
            return found
    return {}


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    found = meta.get("nbgrader") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def _text(source) -> str | None:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    return None


def _identity(path: Path | None) -> tuple | None:
    """A submitted notebook file as it is now (None for none, or a link): read again when it changes."""
    if path is None or not path.is_file() or path.is_symlink():
        return None
    try:
        info = path.stat()
    except OSError:
        return None
    return (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _student_cells(path: Path | None) -> list[tuple]:
    """The cells of a submitted notebook, each as ``(cell type, grade_id, solution, source text or None, counted)``:
    ``solution`` and ``counted`` (a grade, solution or locked cell, whose grade_id nbgrader keeps once) as nbgrader's
    ``utils`` tell them; none for a broken notebook, nor for one over the intake's limit
    (``hand_in_sizes.MAX_NOTEBOOK``, which staging refused: it is never read)."""
    if path is None or not path.is_file() or path.is_symlink():
        return []
    try:
        raw, _size = hand_in_sizes.read_at_most(path, hand_in_sizes.MAX_NOTEBOOK)
        data = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return []
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return []
    read = []
    for cell in cells:
        cell = cell if isinstance(cell, dict) else {}
        meta = _nbgrader(cell)
        read.append((cell.get("cell_type"), meta.get("grade_id"), bool(meta.get("solution")),
                     _text(cell.get("source", "")),
                     bool(meta.get("grade") or meta.get("solution") or meta.get("locked"))))
    return read


def _solutions_by_id(cells: list[tuple]) -> dict[str, tuple[str, str]]:
    """grade_id -> (cell type, source text) of each solution cell. Of cells that share a grade_id, nbgrader keeps the
    last (``DeduplicateIds``: a solution cell copied and pasted keeps its metadata) and takes the others' away."""
    by_id: dict[str, tuple[str, str]] = {}
    for kind, grade_id, solution, text, counted in reversed(cells):
        if not counted or not isinstance(grade_id, str) or grade_id in by_id:
            continue
        by_id[grade_id] = (kind, text) if solution and text is not None else None
    return {grade_id: found for grade_id, found in by_id.items() if found is not None}


#: the solution cells of the submitted notebooks read last, by file (``_identity``): the feedback notebooks, built as
#: the class is graded, read each; nbgrader's comments, at the write-back, ask again (the student's code alone: small)
_SEEN: collections.OrderedDict = collections.OrderedDict()
SEEN_FILES = 2048


def _remember(identity: tuple | None, by_id: dict) -> dict:
    if identity is not None:
        _SEEN[identity] = by_id
        _SEEN.move_to_end(identity)
        while len(_SEEN) > SEEN_FILES:
            _SEEN.popitem(last=False)
    return by_id


def solution_sources(path: Path | None) -> dict[str, str]:
    """grade_id -> the source text of each solution cell of a submitted notebook (none for a broken one)."""
    identity = _identity(path)
    by_id = _SEEN.get(identity) if identity is not None else None
    if by_id is None:
        by_id = _remember(identity, _solutions_by_id(_student_cells(path)))
    return {grade_id: text for grade_id, (_, text) in by_id.items()}


def student_answers(master, path: Path | None) -> dict[int, str]:
    """Index of each solution cell of ``master`` -> the source text of the student's answer to it.

    By the ``grade_id`` of the student's solution cells (the last of those that share one, as nbgrader keeps it);
    where there is none, the student's cell at the same place, if the notebook has as many cells as the master
    and that cell is of the same type and names no other grade_id (its metadata lost, say). Only ``source``."""
    identity = _identity(path)
    cells = _student_cells(path)
    by_id = _remember(identity, _solutions_by_id(cells))
    same_places = len(cells) == len(master.cells)
    answers = {}
    for i, mine in enumerate(master.cells):
        meta = _nbgrader(mine)
        if not meta.get("solution"):
            continue
        kind, text = by_id.get(meta.get("grade_id"), (None, None))
        if kind == mine.cell_type and text is not None:
            answers[i] = text
        elif same_places:
            their_kind, their_id, _, text, _ = cells[i]
            if their_kind == mine.cell_type and their_id in (None, meta.get("grade_id")) and text is not None:
                answers[i] = text
    return answers


def without_hidden_tests(source: str) -> str:
    """The text without its ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` regions (markers included),
    as nbgrader's ClearHiddenTests takes them out of the students' copy."""
    kept, hidden = [], False
    for line in source.splitlines(keepends=True):
        if BEGIN_HIDDEN in line:
            hidden = True
        elif END_HIDDEN in line and hidden:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "".join(kept).rstrip("\n")


#: a test cell's text as the feedback shows it: the same for every student of a batch
_shown = functools.lru_cache(maxsize=1024)(without_hidden_tests)


def as_text(answer: str) -> str:
    """A markdown answer as text: in a fenced block longer than any run of backticks in it, so no HTML,
    link or image of the student's renders."""
    longest = max((len(run) for run in re.findall(r"`+", answer)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{answer}\n{fence}"


def verdict_outputs(test: dict, picture: bytes | None = None) -> list:
    """The kit's verdict on one count, as its test cell's outputs: "passed (p/m)", or the failure's words
    (an error, as nbgrader shows a failed test cell) under the feedback page's picture of a failing case.

    The outputs ``v4.new_output`` makes, without its schema check of each (2,400 of them for 32 students: 2 s);
    the notebook they go in is checked whole before it is written (``write``)."""
    points = f"{test['score']:g}/{test['max_score']:g}"
    if test["status"] == "passed":
        return [from_dict({"output_type": "stream", "name": "stdout", "text": f"passed ({points})\n"})]
    lines = (test.get("output") or "failed").splitlines() or ["failed"]
    outputs = [from_dict({"output_type": "error", "ename": "CheckFailed", "evalue": lines[0],
                          "traceback": [f"CheckFailed ({points})", *lines]})]
    if picture:  # the same picture as the feedback page: expected, yours, the difference
        outputs.insert(0, from_dict({"output_type": "display_data", "metadata": {}, "data": {
            "image/png": base64.b64encode(picture).decode("ascii"),
            "text/plain": "expected, yours and their difference (heatmaps)"}}))
    return outputs


def build(master, answers: dict[int, str], verdicts: dict[str, list]):
    """The autograded notebook: ``master``'s metadata and cells, the student's answers in its solution cells,
    no hidden test, no output but the verdicts (grade_id -> outputs) of its test cells.

    Each cell is a new one, but what it keeps of the master's (metadata, id) and the verdicts' outputs are the very
    objects given: read the notebook, never change it (``master`` is kept for the whole batch)."""
    cells = []
    for i, mine in enumerate(master.cells):
        cell = NotebookNode(mine)
        meta = _nbgrader(mine)
        if meta.get("solution"):
            if i in answers:
                cell.source = as_text(answers[i]) if cell.cell_type == "markdown" else answers[i]
            else:
                cell.source = NO_ANSWER.get(cell.cell_type, "")
            cell.pop("attachments", None)
        else:
            cell.source = _shown(mine.source)
        if cell.cell_type == "code":
            cell.execution_count = None
            cell.outputs = list(verdicts.get(meta.get("grade_id"), [])) if meta.get("grade") else []
        cells.append(cell)
    return NotebookNode({**master, "cells": cells})


def write(dest: Path, course_dir: Path, assignment: str, submitted: Path,
          verdicts: dict[str, dict[str, list]]) -> list[Path]:
    """``dest``/<notebook>.ipynb for each master notebook of the assignment; ``verdicts``: notebook -> grade_id ->
    the test cell's outputs. A notebook the student did not hand in is written with no answers."""
    written = []
    for name, master_path in master_notebooks(course_dir, assignment).items():
        master = _master(str(master_path), master_path.stat().st_mtime_ns)
        theirs = Path(submitted) / f"{name}.ipynb"
        nb = build(master, student_answers(master, theirs), verdicts.get(name, {}))
        path = Path(dest) / f"{name}.ipynb"
        text = notebook_text.writes(nb)  # what nbformat.write writes, the notebook checked as it does
        with path.open("w", encoding="utf8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        written.append(path)
    return written


@functools.lru_cache(maxsize=32)
def _master(path: str, mtime_ns: int):
    """A master notebook, read once per batch (each student's autograded copy is built from a deep copy of it);
    ``mtime_ns``: read again when it changes."""
    return nbformat.read(path, as_version=4)
