"""A module handed in twice, as a ``.py`` file and as a notebook: the one the student worked on is graded.

The bundle gives each module both ways (``exercises/causal_attention.py``, ``notebooks/causal_attention.ipynb``), so a
student who works in the notebook and hands in the whole folder hands in the untouched stub beside it. The form with
more of the module's steps written (a step whose code is more than the stub's ``raise NotImplementedError``) is
graded; on a tie the ``.py`` file, as a folder of ``.py`` files is graded. Either way the other is named in the
feedback. Both are parsed, never run. tests/system/test_handin_corpus.py grades both hand-ins (a stub ``.py`` beside a
worked notebook, and the other way round).
"""
from __future__ import annotations

import ast
import re


def _stub_body(body: list[ast.stmt]) -> bool:
    """A function body that only says it is not written: a docstring, ``super().__init__()``, then a raise of
    ``NotImplementedError`` (or ``pass`` / ``...`` alone)."""
    rest = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    rest = [s for s in rest if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                                    and "super" in ast.dump(s.value.func))]
    if not rest:
        return True
    if len(rest) == 1 and isinstance(rest[0], ast.Pass):
        return True
    last = rest[-1]
    if len(rest) == 1 and isinstance(last, ast.Raise) and last.exc is not None:
        exc = last.exc.func if isinstance(last.exc, ast.Call) else last.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def _written(node: ast.stmt) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return not _stub_body(node.body)
    methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return any(not _stub_body(m.body) for m in methods)


def written_steps(source: str, names: list[str]) -> int:
    """How many of ``names`` (a module's steps) ``source`` writes; the last definition counts, as in Python. Source
    that does not parse has been worked on: each step it defines counts."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return sum(bool(re.search(rf"^\s*(def|class)\s+{re.escape(n)}\b", source, re.M)) for n in names)
    last = {n.name: n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return sum(1 for name in names if name in last and _written(last[name]))


def choose(module: str, py_source: str, notebook_source: str, notebook_name: str, names: list[str]) -> tuple[bool, str]:
    """(whether the notebook is graded, the note that says which was and why) for ``module`` handed in both ways."""
    in_py, in_notebook = written_steps(py_source, names), written_steps(notebook_source, names)
    counts = f"{notebook_name} writes {in_notebook} of its {len(names)} steps, {module}.py {in_py}"
    if in_notebook > in_py:
        return True, f"{module}.py and {notebook_name} were both handed in: {notebook_name} was graded ({counts})"
    return False, f"{module}.py and {notebook_name} were both handed in: {module}.py was graded ({counts})"
