"""The same code in each form a student may hand it in: .py files, a .zip, one notebook per module, one for all."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

from autograder.course.sources import read_module

MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]


def _cell(kind: str, text: str) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _notebook(cells: list[dict]) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def _definitions(source: str) -> list[str]:
    """A module's source cut into cells: its header (imports), then one cell per top-level definition."""
    lines, cells, current = source.splitlines(keepends=True), [], []
    for line in lines:
        if line.startswith(("def ", "class ", "@")) and current and not current[-1].startswith("@"):
            cells.append("".join(current))
            current = []
        current.append(line)
    cells.append("".join(current))
    return [c for c in cells if c.strip()]


def _sibling_imports(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` without its ``from .module import Name`` lines (a notebook cannot run them), and what they named."""
    kept, named = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("from ."):
            module, names = line[len("from ."):].split(" import ")
            named += [(module.strip(), n.strip()) for n in names.split(",")]
        else:
            kept.append(line)
    return "".join(kept), named


def _carried_over(folder: Path, named: list[tuple[str, str]]) -> str:
    """The code cell a module's own notebook needs to run in a kernel: its sibling's imports and definitions of
    ``named`` (as the nbgrader notebooks' "Carried over" cell holds them)."""
    parts: list[str] = []
    for module, name in named:
        theirs = read_module(folder / f"{module}.py")
        parts += [i for i in theirs.imports if i not in parts]
        parts.append(theirs.pieces[name])
    return "\n\n".join(parts) + "\n"


def module_notebooks(folder: Path, dest: Path) -> Path:
    """One notebook per module, each runnable top to bottom in a kernel: a module that imports a sibling's step
    carries a copy of it over (the step itself is graded in its own module)."""
    dest.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        text, named = _sibling_imports((folder / f"{module}.py").read_text())
        cells = [_cell("code", c) for c in _definitions(text)]
        if named:
            cells.insert(1, _cell("code", _carried_over(folder, named)))
        (dest / f"{module}.ipynb").write_text(_notebook(cells))
    return dest


def one_notebook(folder: Path, dest: Path, headings: bool = True, name: str = "attention.ipynb") -> Path:
    """Every module in one notebook, in unit order, runnable top to bottom in a kernel (a later section uses what
    an earlier one defined, with no ``from .module import``); ``headings``: a markdown heading naming each module."""
    cells = []
    for module in MODULES:
        if headings:
            cells.append(_cell("markdown", f"## {module}\n"))
        text, _ = _sibling_imports((folder / f"{module}.py").read_text())
        cells += [_cell("code", c) for c in _definitions(text)]
    dest.mkdir(parents=True, exist_ok=True)
    (dest / name).write_text(_notebook(cells))
    return dest / name


def zipped(folder: Path, dest: Path, prefix: str = "") -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w") as zf:
        for path in sorted(folder.glob("*.py")):
            zf.write(path, prefix + path.name)
    return dest
