"""Where in a notebook a step is defined: the code cell (its number and first line) behind a staged module's line.

The staged module is read back as its cells by ``intake/staged_cells.py``; this names the cell of each step that
``grade check`` reports. The student's code is parsed or compiled here, never run.
"""
from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

from autograder.intake.staged_cells import cell_at
from autograder.outputs.outcomes import StepOutcome


def _text(folder: Path, module: str) -> str | None:
    try:
        return (folder / f"{module}.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def defined_in(folder: Path, step: str) -> str | None:
    """The cell where ``step`` (``module.name``) is defined, the last definition winning as in the kernel;
    for a module that does not compile, the cell of its syntax error."""
    module, name = step.split(".", 1)
    text = _text(folder, module)
    if text is None:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return cell_at(text, exc.lineno or 1)
    lines = [n.lineno for n in tree.body
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name]
    return cell_at(text, lines[-1]) if lines else None


def error_cell(folder: Path, module: str, words: list[str]) -> str | None:
    """The cell of the line that ``words`` (a failure's message: ``causal_attention.py, line 31``) name in
    ``module``'s staged file, such as the line that raised while the module was imported."""
    found = re.search(rf"\b{re.escape(module)}\.py, line (\d+)", "\n".join(words))
    text = _text(folder, module) if found else None
    return cell_at(text, int(found[1])) if text else None


def name_cells(results: list[StepOutcome], folder: Path) -> list[StepOutcome]:
    """``results``, each step with its notebook cell (number and first line), where a staged notebook defines it."""
    named = []
    for r in results:
        cell = defined_in(folder, r.step)
        if r.import_error:  # the cell that stopped the module's import, when the words name its line
            words = next(c.lines for c in r.counts if c.import_error)
            cell = error_cell(folder, r.import_error, list(words)) or cell
        named.append(replace(r, cell=cell))
    return named
