"""Read the code cells of a Jupyter notebook (.ipynb) as module source."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path


class NotebookError(Exception):
    """The notebook cannot be read; the message says why."""


def _kit_check_cell(cell: dict) -> bool:
    """A cell ``grade nbgrader`` wrote to check answers (a graded test cell, the checking helper): the hidden
    suites judge a submission in the sandbox, so the notebook's own checks are not part of its code."""
    meta = cell.get("metadata")
    nb = meta.get("nbgrader") if isinstance(meta, dict) else None
    return isinstance(nb, dict) and (nb.get("grade") is True or nb.get("grade_id") == "checking_helper")


def _cells(path: Path) -> list[tuple[str, int, str]]:
    """(kind, number, source) of the notebook's markdown and code cells; code with IPython lines commented out."""
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
    found = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown") or _kit_check_cell(cell):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            raise NotebookError(f"{path.name}: cell {number} has no readable source")
        if cell["cell_type"] == "code":
            source = "\n".join(("# (IPython) " + line) if line.lstrip().startswith(("%", "!")) else line
                               for line in source.splitlines())
        found.append((cell["cell_type"], number, source))
    if not any(kind == "code" for kind, _, _ in found):
        raise NotebookError(f"{path.name} has no code cells")
    return found


def _chunk(path: Path, number: int, source: str) -> str:
    return f"# --- {path.name}, code cell {number} ---\n" + source


def to_source(path: Path) -> str:
    """The notebook's code cells, in order, as one module; IPython magics and shell lines commented out.

    The test cells and checking helper of an nbgrader notebook are left out (``_kit_check_cell``)."""
    return "\n\n".join(_chunk(path, n, src) for kind, n, src in _cells(path) if kind == "code") + "\n"


def _marker(text: str, modules: list[str], kind: str) -> str | None:
    """The module a markdown heading, or a code cell's leading comment, names (``# trainable_attention``)."""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if not line.startswith("#"):
            return None if kind == "code" else None
        words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", line)
        named = [m for m in modules if m in words]
        if len(named) == 1:
            return named[0]
    return None


def _defined(source: str) -> list[str] | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _imports_only(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return bool(body) and all(isinstance(n, (ast.Import, ast.ImportFrom)) or
                              (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) for n in body)


def split(path: Path, steps: dict[str, list[str]]) -> tuple[dict[str, str], list[str]]:
    """One notebook for every module: each module's source, by the notebook's structure, and what was unclear.

    ``steps``: module -> the names of its steps. A code cell belongs to the module that a heading above it (or
    its own leading comment) names; else to the one module whose steps it defines; else to the module of the
    cells before it. Cells before any module (imports, the inputs) go to every module. A step name that two
    modules share (``context_vector``) in a cell nothing places is used for both, and said so.
    """
    modules = list(steps)
    owners: dict[str, set[str]] = {}
    for module, names in steps.items():
        for name in names:
            owners.setdefault(name, set()).add(module)
    placed: list[tuple[set[str] | None, str]] = []  # None: a cell of imports, placed with the cell after it
    notes: list[str] = []
    current = None
    for kind, number, source in _cells(path):
        marker = _marker(source, modules, kind)
        if kind == "markdown":
            current = marker or current
            continue
        defined = _defined(source) or []
        mine = [n for n in defined if n in owners]
        if marker:
            target = {marker}
        elif mine:
            common = set.intersection(*(owners[n] for n in mine))
            if len(common) == 1:
                target = common
            elif current is not None and (current in common or not common):
                target = {current}
            else:
                target = set().union(*(owners[n] for n in mine))
                shared = sorted(n for n in mine if len(owners[n]) > 1)
                if shared:
                    notes.append(f"{path.name}, code cell {number}: {', '.join(shared)} is a step of "
                                 f"{' and '.join(sorted(target))}, and nothing above the cell says which module it "
                                 f"belongs to, so it was used for both; put a heading naming the module (such as "
                                 f"'# {sorted(target)[-1]}') above it")
        elif _imports_only(source):
            target = None if current is not None else set(modules)  # a section's imports go with its code
        else:
            target = {current} if current is not None else set(modules)
        if target is not None and len(target) == 1:
            current = next(iter(target))
        placed.append((target, _chunk(path, number, source)))
    following: set[str] | None = None
    for i in range(len(placed) - 1, -1, -1):  # imports take the module of the code cell after them
        target, chunk = placed[i]
        if target is None:
            placed[i] = (following or ({current} if current else set(modules)), chunk)
        else:
            following = target
    sources = {m: "\n\n".join(chunk for target, chunk in placed if m in target) + "\n" for m in modules}
    return sources, notes
