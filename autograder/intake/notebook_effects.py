"""What a hand-in's notebooks do besides defining its modules, settled when it is staged, and said once.

- ``%%writefile NAME`` (and nbconvert's form of it in an exported ``.py``, ``get_ipython().run_cell_magic('writefile',
  ...)``): the kernel wrote NAME beside the notebook, where a later cell imports it (``from utils import softmax``).
  The sandbox mounts the staged folder read-only, so staging writes the file there itself, in the order the cells
  ran; never over a file handed in, nor a module the intake made, nor a file the grader never runs
  (``stage.INERT``).
- Shell commands (``!pip install ...``, ``%%bash``): not run when grading; said once.
- ``input()``: answers an empty line when grading (no one types); said once.
- Which modules were read from which notebooks: kept beside the modules (``FILE``), for the trusted side that grades
  them (a notebook's module runs cell by cell, past a failing cell, and its messages name the notebook's cells:
  ``grading/runner.py``).

tests/unit/test_ipython_cells.py and tests/system/test_handin_corpus.py show each.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import hand_in_sizes, ipython_cells

#: the file, in a staged folder, that says which modules were read from which notebooks (a name no hand-in's file
#: is staged under: staging copies ``.py`` files only)
FILE = ".from_notebooks.json"
#: at most this many files written by %%writefile cells, per hand-in
MAX_WRITTEN = 50


def from_notebooks(folder: Path) -> dict[str, list[str]]:
    """module -> the notebooks it was read from, for a folder staging made (else empty)."""
    try:
        found = json.loads((Path(folder) / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(m): [str(n) for n in names] for m, names in found.items() if isinstance(names, list)}


def settle(dest: Path, made: dict[str, list[str]], reads: dict, exported: dict[str, str], inert: set[str]) -> list[str]:
    """Write what the notebooks' ``%%writefile`` cells (and exported ``.py`` files' calls of it) wrote, and ``FILE``;
    return the notes that say what was written and what was not run.

    ``made``: module -> the notebooks it was read from; ``reads``: notebook name -> ``notebook.Read`` of each notebook
    read; ``exported``: the ``.py`` files staged, name -> text; ``inert``: names the grader never runs."""
    notes: list[str] = []
    handed = {p.name for p in dest.iterdir()}
    written: dict[str, str] = {}
    refused: list[str] = []
    order = [(name, number, file, text, append) for name in sorted(reads)
             for number, file, text, append in reads[name].written]
    order += [(name, None, file, text, append) for name, source in sorted(exported.items())
              for file, text, append in ipython_cells.written_by_calls(source)]
    for notebook, number, file, text, append in order:
        where = f"{notebook}, code cell {number}" if number is not None else notebook
        if "/" in file or "\\" in file or file.startswith(".") or file in inert or file in handed:
            refused.append(f"{file} ({where})")
            continue
        text = (written.get(file, "") + text) if append else text
        if ((len(written) >= MAX_WRITTEN and file not in written)
                or len(text.encode("utf-8")) > hand_in_sizes.MAX_SOURCE):
            refused.append(f"{file} ({where})")
            continue
        written[file] = text
        notes.append(f"{file} was written by %%writefile in {where}, as the kernel wrote it beside the notebook")
    for file, text in written.items():
        (dest / file).write_text(text, encoding="utf-8")
    if refused:
        notes.append("not written, as %%writefile would write it beside the notebook: " + "; ".join(refused)
                     + " (a file handed in, a module, or a name the grader does not run)")
    shell = [f"{name}, code cell {number}: {words}" for name in sorted(reads) for number, words in reads[name].not_run]
    if shell:
        notes.append("not run when grading (the grader runs no shell command; your code ran without it): "
                     + "; ".join(shell))
    asked = [f"{name}, code cell {number}" for name in sorted(reads) for number in reads[name].asks_input]
    asked += [name for name, source in sorted(exported.items()) if ipython_cells.asks_for_input(source)]
    if asked:
        notes.append("input() answers an empty line when grading (no one types): " + "; ".join(asked))
    if made:
        (dest / FILE).write_text(json.dumps(made, sort_keys=True), encoding="utf-8")
    return notes
