"""A staged notebook's module read back as the notebook's cells: where each of its lines was written.

The intake writes each code cell of a notebook into the staged module under a marker line,
``# --- attention.ipynb, code cell 12 ---`` (``intake/notebook.py``), and keeps each of a cell's lines on its line
(``ipython_cells.py``); these read it back, for the trusted side that names a failure's cell (``grading/runner.py``,
``grading/failed_cells.py``, ``check/cells.py``). The student's code is parsed here, never run
(tests/unit/test_ipython_cells.py, tests/unit/test_notebook_intake.py).
"""
from __future__ import annotations

import ast
import re

from .ipython_cells import IPYTHON

MARKER = re.compile(r"^# --- (?P<notebook>.+\.ipynb), code cell (?P<number>\d+) ---$")
#: any line the intake writes between cells: a code cell's marker, or its own lines (a notebook's carried-over steps)
ANY_MARKER = re.compile(r"^# --- .* ---$")


def pieces(text: str) -> list[tuple[int, str]]:
    """A staged notebook's module cut at the intake's lines: (the 1-based line each piece starts on, its text). The
    worker cuts it alike to run it cell by cell (``worker/submission.py: cells_of``)."""
    lines = text.split("\n")
    starts = [0] + [i for i, line in enumerate(lines) if i > 0 and ANY_MARKER.match(line)]
    return [(a + 1, "\n".join(lines[a:b])) for a, b in zip(starts, starts[1:] + [len(lines)])]


_CALL = re.compile(r"^(?P<target>[\w.]+ = )?get_ipython\(\)\."
                   r"(?P<method>run_line_magic|system|getoutput)\((?P<args>.*)\)$")


def as_written(line: str) -> str:
    """A staged line as the student wrote it in the cell: IPython's syntax, where the intake's transformer made a call
    of it (``%matplotlib inline``, ``!pip install torch``, ``files = !ls``, ``torch.softmax?``) or a comment."""
    if line.startswith(IPYTHON):
        return line[len(IPYTHON):]
    found = _CALL.match(line)
    if not found:
        return line
    try:
        args = ast.literal_eval(f"({found['args']},)")
    except (ValueError, SyntaxError):
        return line
    if not all(isinstance(a, str) for a in args) or not args:
        return line
    if found["method"] == "run_line_magic":
        name, rest = args[0], args[1] if len(args) > 1 else ""
        said = f"{rest}?" if name == "pinfo" else f"{rest}??" if name == "pinfo2" else f"%{name} {rest}".rstrip()
    else:
        said = f"!{args[0]}"
    return (found["target"] or "") + said


def place(text: str, line: int) -> str | None:
    """``attention.ipynb, code cell 12, line 3`` for ``line`` (1-based) of a staged module's ``text``: the cell, and
    the line in it (the intake keeps each of a cell's lines on its line); None for a line the intake wrote itself or
    one that comes from no cell."""
    lines = text.splitlines()
    for i in range(min(line, len(lines)) - 1, -1, -1):
        if ANY_MARKER.match(lines[i]):
            found = MARKER.match(lines[i])
            return f"{found['notebook']}, code cell {found['number']}, line {line - i - 1}" if found else None
    return None


def cell_at(text: str, line: int) -> str | None:
    """``attention.ipynb, code cell 12: class CausalAttention(nn.Module):`` for ``line`` (1-based) of a staged
    module's ``text``; None when that line does not come from a notebook's cell."""
    lines = text.splitlines()
    for i in range(min(line, len(lines)) - 1, -1, -1):
        found = MARKER.match(lines[i])
        if found:
            first = next((s for s in lines[i + 1:] if s.strip()), "").strip()
            return f"{found['notebook']}, code cell {found['number']}: {as_written(first)[:80]}"
    return None
