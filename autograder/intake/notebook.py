"""Read the code cells of a Jupyter notebook (.ipynb) as module source."""
from __future__ import annotations

import json
from pathlib import Path


class NotebookError(Exception):
    """The notebook cannot be read; the message says why."""


def _kit_check_cell(cell: dict) -> bool:
    """A cell ``grade nbgrader`` wrote to check answers (a graded test cell, the checking helper): the hidden
    suites judge a submission in the sandbox, so the notebook's own checks are not part of its code."""
    meta = cell.get("metadata")
    nb = meta.get("nbgrader") if isinstance(meta, dict) else None
    return isinstance(nb, dict) and (nb.get("grade") is True or nb.get("grade_id") == "checking_helper")


def to_source(path: Path) -> str:
    """The notebook's code cells, in order, as one module; IPython magics and shell lines commented out.

    The test cells and checking helper of an nbgrader notebook are left out (``_kit_check_cell``)."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise NotebookError(f"{path.name} is not UTF-8 text, so it is not a valid notebook") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{path.name} is not a valid notebook: its JSON is broken at line {exc.lineno}, "
                            f"column {exc.colno} ({exc.msg})") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise NotebookError(f"{path.name} is not a valid notebook: it has no list of cells (nbformat 4 expected)")
    chunks = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or _kit_check_cell(cell):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            raise NotebookError(f"{path.name}: code cell {number} has no readable source")
        lines = [("# (IPython) " + line) if line.lstrip().startswith(("%", "!")) else line
                 for line in source.splitlines()]
        chunks.append(f"# --- {path.name}, code cell {number} ---\n" + "\n".join(lines))
    if not chunks:
        raise NotebookError(f"{path.name} has no code cells")
    return "\n\n".join(chunks) + "\n"
