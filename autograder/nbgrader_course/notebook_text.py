"""A notebook's file text, byte for byte what ``nbformat.write`` writes, made a cell at a time, each cell's text
kept for the next notebook that holds the same cell.

nbformat writes a notebook as JSON with one space per level and sorted keys (``nbformat.v4.nbjson.writes``);
Python's ``json`` makes that indented text in pure Python, object by object, and nbformat deep-copies the notebook
first. A class's autograded notebooks are mostly the same cells: the course's text, its test cells showing
"passed". So each cell is written here once per process: its text at the cells' depth is kept, under the cell's
compact JSON (which the C encoder makes fast), and the next notebook that holds the same cell takes the text as it
is. 32 students' 128 notebooks: 4,384 cells, 343 of them distinct.

Each cell is checked against the notebook schema when it is first written (the same check ``nbformat.validate``
makes of every cell of a notebook), and the rest of each notebook (its metadata and format) every time.
"""
from __future__ import annotations

import functools
import json

from .notebook_format import nbformat
from nbformat.notebooknode import NotebookNode
from nbformat.v4.nbjson import BytesEncoder
from nbformat.v4.rwbase import split_lines, strip_transient

#: the cells' depth in the text: the notebook's object, then its ``cells`` list
_DEPTH = "\n  "
#: how the text begins: the notebook's keys are sorted, and ``cells`` comes first
_NO_CELLS = '{\n "cells": []'
#: a cell this long (a picture in its outputs) is written and checked each time, not kept
KEEP_AT_MOST = 16_384


def writes(nb) -> str:
    """``nbformat.writes(nb)``'s text (version 4), ``nb`` checked against its schema as ``nbformat.validate`` checks
    it; raises ``nbformat.ValidationError`` where it would."""
    minor = nb.get("nbformat_minor", 0)
    rest = NotebookNode({key: value for key, value in nb.items() if key != "cells"})
    rest["cells"] = []
    nbformat.validate(rest)
    text = nbformat.v4.writes(rest)
    if not nb.get("cells"):
        return text
    if not text.startswith(_NO_CELLS):
        raise ValueError("not the text of a notebook: it does not begin with its cells")
    cells = ",\n  ".join(_cell(cell, minor) for cell in nb["cells"])
    return '{\n "cells": [\n  ' + cells + "\n ]" + text[len(_NO_CELLS):]


def _cell(cell, minor: int) -> str:
    key = json.dumps(cell, cls=BytesEncoder, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if len(key) > KEEP_AT_MOST:
        return _written(key, minor)
    return _kept(key, minor)


def _written(key: str, minor: int) -> str:
    """The text of the cell whose compact JSON is ``key``, at the cells' depth, as ``nbformat.v4.writes`` makes it:
    its multi-line strings split into lines, its transient metadata left out."""
    alone = nbformat.from_dict({"cells": [json.loads(key)], "metadata": {}, "nbformat": 4, "nbformat_minor": minor})
    nbformat.validate(alone)  # as a notebook of its own: nbformat's fast validator checks only whole notebooks
    on_disk = strip_transient(split_lines(alone)).cells[0]
    return json.dumps(on_disk, cls=BytesEncoder, indent=1, sort_keys=True, separators=(",", ": "),
                      ensure_ascii=False).replace("\n", _DEPTH)


#: a class's distinct cells: the course's (about 140 for this unit) and each student's answers and failures
_kept = functools.lru_cache(maxsize=2048)(_written)
