"""Read the code cells of a Jupyter notebook (.ipynb) as module source.

A notebook is read only up to ``hand_in_sizes.MAX_NOTEBOOK``: one over it is refused before a byte is parsed
(tests/integration/test_staging_limits.py)."""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import hand_in_sizes, ipython_cells


class NotebookError(Exception):
    """The notebook cannot be read; the message says why, ``cause`` as data: ``broken_notebook`` (its JSON, or
    no cells), ``too_large`` (over ``hand_in_sizes.MAX_NOTEBOOK``) or ``unreadable`` (the file cannot be opened)."""

    def __init__(self, message: str, cause: str = "broken_notebook"):
        super().__init__(message)
        self.cause = cause


def _kit_check_cell(cell: dict) -> bool:
    """A cell ``grade nbgrader`` wrote to check answers (a graded test cell, the checking helper): the hidden
    suites judge a submission in the sandbox, so the notebook's own checks are not part of its code."""
    meta = cell.get("metadata")
    nb = meta.get("nbgrader") if isinstance(meta, dict) else None
    return isinstance(nb, dict) and (nb.get("grade") is True or nb.get("grade_id") == "checking_helper")


@dataclass
class Read:
    """A notebook as grading runs it: its cells, and what its cells do besides their Python."""
    #: (kind, number, source) of its markdown and code cells; code as the kernel runs it (``ipython_cells.transform``)
    cells: list[tuple[str, int, str]]
    #: files its ``%%writefile`` cells write: (cell number, name, text, append)
    written: list[tuple[int, str, str, bool]] = field(default_factory=list)
    #: what grading does not run: (cell number, the cell's words)
    not_run: list[tuple[int, str]] = field(default_factory=list)
    #: the code cells that call ``input()``
    asks_input: list[int] = field(default_factory=list)


def _cells(path: Path, nb: Read | None = None) -> list[tuple[str, int, str]]:
    return (nb or read(path)).cells


def read(path: Path) -> Read:
    """The notebook's markdown and code cells, code as the kernel runs it; read once by staging, however many
    modules it gives (each function below takes what was read, else reads the notebook itself)."""
    try:
        raw, size = hand_in_sizes.read_at_most(path, hand_in_sizes.MAX_NOTEBOOK)
    except OSError as exc:
        raise NotebookError(f"{path.name} cannot be read ({exc.strerror})", "unreadable") from None
    if raw is None:
        raise NotebookError(hand_in_sizes.notebook_refused(path.name, size), "too_large")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise NotebookError(f"{path.name} is not UTF-8 text, so it is not a valid notebook") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{path.name} is not a valid notebook: its JSON is broken at line {exc.lineno}, "
                            f"column {exc.colno} ({exc.msg})") from None
    except RecursionError:
        raise NotebookError(f"{path.name} is not a valid notebook: its JSON is nested too deeply") from None
    except ValueError:  # a number of more digits than Python converts (sys.get_int_max_str_digits)
        raise NotebookError(f"{path.name} is not a valid notebook: it holds a number too long to read") from None
    finally:
        del raw
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise NotebookError(f"{path.name} is not a valid notebook: it has no list of cells (nbformat 4 expected)")
    found = Read([])
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown") or _kit_check_cell(cell):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            raise NotebookError(f"{path.name}: cell {number} has no readable source")
        if cell["cell_type"] == "code":
            ran = ipython_cells.transform(source)
            found.written += [(number, *w) for w in ran.written]
            found.not_run += [(number, words) for words in ran.not_run]
            if ipython_cells.asks_for_input(ran.source):
                found.asks_input.append(number)
            source = ran.source
        found.cells.append((cell["cell_type"], number, source))
    if not any(kind == "code" for kind, _, _ in found.cells):
        raise NotebookError(f"{path.name} has no code cells")
    return found


def _chunk(path: Path, number: int, source: str) -> str:
    return f"# --- {path.name}, code cell {number} ---\n" + source


def to_source(path: Path, nb: Read | None = None) -> str:
    """The notebook's code cells, in order, as one module, as the kernel runs them (``ipython_cells``).

    The test cells and checking helper of an nbgrader notebook are left out (``_kit_check_cell``)."""
    return _code(path, _cells(path, nb))


def _code(path: Path, cells: list[tuple[str, int, str]]) -> str:
    return "\n\n".join(_chunk(path, n, src) for kind, n, src in cells if kind == "code") + "\n"


def module_source(path: Path, module: str, steps: dict[str, list[str]], nb: Read | None = None) -> str:
    """The notebook of one module as that module: its code cells (``to_source``), then the steps of other modules
    that it carries over (the wrapper's notebook defines its own copy of ``CausalAttention`` to run in the
    kernel) bound to those modules' own, as a ``.py`` file's ``from .causal_attention import CausalAttention``
    would: each step is graded in its own module, and a correct stand-in replaces it everywhere it is bound.
    When that module does not import, the copy stays."""
    cells = _cells(path, nb)
    text = _code(path, cells)
    carried: dict[str, list[str]] = {}
    for kind, _, source in cells:
        for name in (_defined(source) or []) if kind == "code" else []:
            for other, names in steps.items():
                if other != module and name in names and name not in steps.get(module, []):
                    carried.setdefault(other, [])
                    if name not in carried[other]:
                        carried[other].append(name)
    if not carried:
        return text
    lines = [f"# --- {path.name}: steps of other modules carried over; each is graded in its own module ---"]
    for other, names in carried.items():
        lines += ["try:", f"    from .{other} import {', '.join(names)}",
                  "except Exception:  # that module is not handed in or does not import: the copy above stays",
                  "    pass"]
    return text + "\n" + "\n".join(lines) + "\n"


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


def _bound(source: str) -> list[str]:
    """The names a cell binds at its top level (definitions, assignments, imports), as the kernel keeps them."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: list[str] = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def earlier_sections(notebook_name: str, module: str, earlier: dict[str, list[str]]) -> str:
    """The lines that give ``module`` the names that the sections above it defined (``earlier``: module -> its
    names), as the kernel does: imported from those modules, so that they are the same objects (a correct
    stand-in replaces a step everywhere it is bound). A section that does not run leaves its names
    undefined, as a failed cell does in the kernel."""
    lines = [f"# --- {notebook_name}: the names defined in the sections above, as the kernel has them ---"]
    for other, names in earlier.items():
        if names:
            lines += ["try:", f"    from .{other} import {', '.join(names)}",
                      "except Exception:  # that section does not run: its names stay undefined, as in the kernel",
                      "    pass"]
    return "\n".join(lines)


def _imports_only(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return bool(body) and all(isinstance(n, (ast.Import, ast.ImportFrom)) or
                              (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) for n in body)


def split(path: Path, steps: dict[str, list[str]], nb: Read | None = None) -> tuple[dict[str, str], list[str]]:
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
    placed: list[tuple[set[str] | None, str, list[str]]] = []  # None: imports, placed with the cell after them
    notes: list[str] = []
    current = None
    for kind, number, source in _cells(path, nb):
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
        placed.append((target, _chunk(path, number, source), _bound(source)))
    following: set[str] | None = None
    for i in range(len(placed) - 1, -1, -1):  # imports take the module of the code cell after them
        target, chunk, bound = placed[i]
        if target is None:
            placed[i] = (following or ({current} if current else set(modules)), chunk, bound)
        else:
            following = target
    return _with_earlier_names(path.name, modules, steps, placed), notes


def _with_earlier_names(name: str, modules: list[str], steps: dict[str, list[str]],
                        placed: list[tuple[set[str], str, list[str]]]) -> dict[str, str]:
    """Each module's cells, after the names its earlier sections bound (``earlier_sections``), as in the kernel.

    Sections are ordered by where each module's own cells first appear; a module sees the names bound by the
    own cells of the modules before it, except the names of its own steps (it must define those itself)."""
    shared = set(modules)
    own = [(target, chunk, bound) for target, chunk, bound in placed if target != shared or len(modules) == 1]
    order: list[str] = []
    for target, _, _ in own:
        order += [m for m in sorted(target, key=modules.index) if m not in order]
    sources = {}
    for module in modules:
        before = order[: order.index(module)] if module in order else []
        earlier = {}
        for other in before:
            names = [n for t, _, bound in own if other in t and module not in t for n in bound]
            earlier[other] = [n for n in dict.fromkeys(names) if n not in steps.get(module, [])]
        block = earlier_sections(name, module, earlier) if any(earlier.values()) else None
        parts = []
        for target, chunk, _ in placed:
            if module not in target:
                continue
            if block and target != shared:  # just before the module's own first cell
                parts.append(block)
                block = None
            parts.append(chunk)
        sources[module] = "\n\n".join(parts) + "\n"
    return sources
