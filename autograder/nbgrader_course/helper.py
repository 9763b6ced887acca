"""The checking helper: ``checking_helper.py``, beside the notebooks, and the notebooks' cell importing it.

The file is ``autograder.feedback``'s own modules (the words and numbers every grading path uses), in the
order they import one another (after the worker's module that finds a module's unregistered layers, which the
runner uses too), then the notebook's runner (``cell_runner.py``), each pasted as it is but
for its ``from __future__`` import and its imports of the feedback package (the file is one namespace),
then the course's tolerances and the name of the data file. It depends on torch and the standard library
only. ``grade nbgrader`` writes it into ``source/<assignment>/``, where nbgrader treats it as it treats the
data file: ``generate_assignment`` copies it into ``release/`` (students fetch it with the notebooks) and
``autograde`` copies the source's master copy beside each student's notebooks, over any copy a student
handed in. Each notebook's locked "checking helper" cell is then one import (``import_cell``): the
student's notebook starts with the inputs and the first exercise, not 800 lines of the kit's code, and a
page of ``nbgrader generate_feedback`` shows the student's work, not the helper.
"""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from . import cell_runner

PACKAGE = "autograder.feedback"
FEEDBACK_DIR = Path(__file__).resolve().parent.parent / "feedback"
#: the worker's modules the runner uses as they are (torch only): pasted first, their imports dropped like the package's
WORKER_MODULES = ("autograder.worker.unregistered",)
#: what a pasted module may import besides its own package's modules
ALLOWED_IMPORTS = {"torch", "math", "re", "builtins", "base64", "dataclasses", "os", "traceback", "ast", "linecache",
                   "warnings"}


#: the module beside the notebooks, and its file
MODULE = "checking_helper"
FILE = f"{MODULE}.py"
#: what the test cells use of it: the one name the notebook's cell imports with ``*``
EXPORTS = ("check_function", "check_module", "check_parameters", "check_raises", "check_accepts", "check_dropout",
           "T", "D", "B", "Digest", "Gen", "Holder", "CheckFailed")


class HelperError(Exception):
    """A feedback module cannot be pasted into a notebook (an import, or a name defined twice)."""


def _module_name(node: ast.ImportFrom, here: str) -> str | None:
    """The feedback module an ``import from`` names, or None when it names another package."""
    if node.level:
        return f"{PACKAGE}.{node.module}" if node.module and node.level == 1 else None
    if node.module and (node.module.startswith(PACKAGE + ".") or node.module in WORKER_MODULES):
        return node.module
    return None


def _strip(source: str, name: str) -> tuple[str, set[str]]:
    """``source`` without its future import and feedback imports; the feedback modules it imports."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: list[tuple[int, int]] = []
    needs: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            target = _module_name(node, name)
            if node.module == "__future__":
                drop.append((node.lineno, node.end_lineno))
            elif target is not None:
                needs.add(target)
                drop.append((node.lineno, node.end_lineno))
            elif node.level or (node.module or "").split(".")[0] not in ALLOWED_IMPORTS:
                raise HelperError(f"{name} imports from {node.module}: a notebook has torch and the standard library "
                                  "only")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in ALLOWED_IMPORTS:
                    raise HelperError(f"{name} imports {alias.name}: a notebook has torch and the standard library "
                                      "only")
    for node in ast.walk(tree):  # imports inside functions are not pasted away: none may name the package
        if isinstance(node, ast.ImportFrom) and node not in tree.body and _module_name(node, name):
            raise HelperError(f"{name} imports {node.module} inside a function: import it at the top")
        if isinstance(node, ast.ImportFrom) and node.level and not node.module:
            raise HelperError(f"{name}: `from . import ...` would need the module's name in the notebook")
    for start, end in sorted(drop, reverse=True):
        del lines[start - 1:end]
    return "".join(lines).strip() + "\n", needs


def _defined(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def feedback_modules() -> list[str]:
    """The feedback package's modules (``__init__`` aside), each after the ones it imports."""
    sources = {f"{PACKAGE}.{p.stem}": p.read_text(encoding="utf-8")
               for p in sorted(FEEDBACK_DIR.glob("*.py")) if p.stem != "__init__"}
    needs = {name: _strip(text, name)[1] for name, text in sources.items()}
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise HelperError(f"the feedback modules import each other in a circle: {' -> '.join(path + (name,))}")
        for dep in sorted(needs[name]):
            if dep not in sources:
                raise HelperError(f"{name} imports {dep}, which is not a module of {PACKAGE}")
            visit(dep, path + (name,))
        order.append(name)

    for name in sources:
        visit(name, ())
    return order


def pasted(module_names: list[str]) -> list[tuple[str, str]]:
    """(module, its pasted source) for each module, the names each defines checked to be unique."""
    seen: dict[str, str] = {}
    out = []
    for name in module_names:
        text, _ = _strip(inspect.getsource(importlib.import_module(name)), name)
        for defined in _defined(text):
            if defined in seen:
                raise HelperError(f"{defined} is defined by both {seen[defined]} and {name}: they share {FILE}'s "
                                  "namespace")
            seen[defined] = name
        out.append((name, text))
    return out


def module_source(tolerances: dict[str, tuple], data_file: str | None = None) -> str:
    """``checking_helper.py``: the feedback modules, the runner, then ``TOLERANCES`` (step -> ((rtol, atol) of
    float32, (rtol, atol) of float64)), the data file's name and ``__all__`` (``EXPORTS``)."""
    parts = ['"""The checking helper of the notebooks beside this file: what their test cells call.\n\n'
             "Written by the attention autograder kit's `grade nbgrader`; each notebook imports it in its locked\n"
             "\"checking helper\" cell. The same tolerances, comparisons, likely mistakes and messages as `grade "
             "check`\n"
             "(the kit's autograder/feedback package), then the code that runs your functions and classes in the\n"
             "notebook (autograder/nbgrader_course/cell_runner.py). Do not edit it: grading uses the course's copy.\n"
             '"""']
    for name, text in pasted([*WORKER_MODULES, *feedback_modules(), cell_runner.__name__]):
        parts.append(f"# ---- {name.replace('.', '/')}.py\n{text}")
    entries = "".join(f"\n    {step!r}: {value}," for step, value in tolerances.items())
    tail = f"TOLERANCES.update({{{entries}\n}})"
    if data_file:
        tail += f"\nDATA_FILE = {data_file!r}"
    tail += "\n\n__all__ = [" + ", ".join(repr(n) for n in EXPORTS) + "]"
    parts.append(tail)
    return "\n\n".join(parts) + "\n"


def import_cell() -> str:
    """The notebooks' locked "checking helper" cell: the import of ``checking_helper.py``."""
    return ("# The checking helper (locked): the checks the test cells call (check_function, ...) and the values\n"
            f"# they are written with (T, D, ...), from {FILE} beside this notebook: the kit's own code.\n"
            f"from {MODULE} import *")
