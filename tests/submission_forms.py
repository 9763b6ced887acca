"""The same code in each form a student may hand it in: .py files, a .zip, one notebook per module, one for all."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

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


def module_notebooks(folder: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        text = (folder / f"{module}.py").read_text()
        (dest / f"{module}.ipynb").write_text(_notebook([_cell("code", c) for c in _definitions(text)]))
    return dest


def one_notebook(folder: Path, dest: Path, headings: bool = True, name: str = "attention.ipynb") -> Path:
    """Every module in one notebook, in unit order; ``headings``: a markdown heading naming each module."""
    cells = []
    for module in MODULES:
        if headings:
            cells.append(_cell("markdown", f"## {module}\n"))
        cells += [_cell("code", c) for c in _definitions((folder / f"{module}.py").read_text())]
    dest.mkdir(parents=True, exist_ok=True)
    (dest / name).write_text(_notebook(cells))
    return dest / name


def zipped(folder: Path, dest: Path, prefix: str = "") -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w") as zf:
        for path in sorted(folder.glob("*.py")):
            zf.write(path, prefix + path.name)
    return dest
