"""A notebook's cell that raised while its module ran: named in that student's feedback, and listed for a person only
where it changed what was graded.

A worker runs a notebook's module cell by cell and goes on past a cell that raises, as nbgrader runs a notebook
(``worker/submission.py``), and says which cells raised: a claim, which can only cost that student points. The
trusted side names each cell from the source it staged (``intake/staged_cells.py``), and judges from that source alone
whether the cell changed what was graded: it did when a step of its module that lost points is defined in that cell,
or uses, itself or through the module's other functions and classes, a name the cell binds (an import that never
ran: ``F`` undefined). A scratch cell at the end (``attn = book_inputs @ book_inputs``) changes nothing graded: it is
named to the student, and no person is asked to look. tests/unit/test_ipython_cells.py shows both.
"""
from __future__ import annotations

import ast
import re

from autograder.feedback.redact import redact_text
from autograder.intake import staged_cells

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _bound(tree: ast.Module) -> set[str]:
    """The names a cell binds at its top level, in its blocks (``if``, ``try``, ``with``, ``for``) too."""
    names: set[str] = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, _DEFS):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if hasattr(node, "target") else [i.optional_vars for i in node.items if i.optional_vars]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        for field in ("body", "orelse", "finalbody", "handlers"):
            if not isinstance(node, _DEFS):
                todo += [n for n in getattr(node, field, []) if isinstance(n, ast.AST)]
    return names


def _bound_by_words(text: str) -> set[str]:
    """A cell that does not parse: the names its lines start to bind, read from its words."""
    found = set(re.findall(r"^\s*(?:def|class)\s+([A-Za-z_]\w*)", text, re.M))
    found |= set(re.findall(r"^([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)", text, re.M))
    found |= {n.split(".")[0] for n in re.findall(r"^\s*import\s+([\w.]+)", text, re.M)}
    found |= set(re.findall(r"^\s*(?:from\s+\S+\s+)?import\s+.*\bas\s+(\w+)", text, re.M))
    return found


def _pieces(text: str) -> list[tuple[int, str, ast.Module | None]]:
    found = []
    for first, piece in staged_cells.pieces(text):
        try:
            tree = ast.parse(piece)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        found.append((first, piece, tree))
    return found


def affected(text: str, line: int | None, steps: list[str], lost: set[str]) -> list[str]:
    """The steps among ``steps`` (a module's, by name) that lost points (``lost``) and that the cell holding ``line``
    of the staged module ``text`` changed: defined there, or using a name it binds. A cell that cannot be found
    (no line) changed every step that lost points."""
    pieces = _pieces(text)
    failing = next((p for p in reversed(pieces) if line is not None and p[0] <= line), None)
    if failing is None:
        return [s for s in steps if s in lost]
    bound = _bound(failing[2]) if failing[2] is not None else _bound_by_words(failing[1])
    definitions: dict[str, ast.AST] = {}
    for _first, _piece, tree in pieces:
        for node in tree.body if tree is not None else ():
            if isinstance(node, _DEFS):
                definitions[node.name] = node
    found = []
    for step in steps:
        if step not in lost:
            continue
        if step in bound or step not in definitions:
            found.append(step)
            continue
        used, todo = set(), [definitions[step]]
        while todo:
            node = todo.pop()
            for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - used:
                used.add(name)
                if name in definitions and name != step:
                    todo.append(definitions[name])
        if used & bound:
            found.append(step)
    return found


def said(module_named: str, err: dict) -> str:
    """The note the student reads for one failing cell of a notebook's module."""
    where = (err.get("where") or {}).get("cell") or module_named
    message = redact_text(str(err.get("message") or ""), True, 200)
    text = " ".join(str((err.get("where") or {}).get("text") or "").split())  # a syntax error's own line
    return (f"{where} raised {err.get('type') or 'an error'}{': ' + message if message else ''}"
            f"{' (' + text[:200] + ')' if text else ''}; the cells after it ran, as in Jupyter, and each step is "
            "graded as it was defined")


def report(cell_errors: dict[str, list[dict]], text_of, named, lost: set[str],
           steps_by_module: dict[str, list[str]]) -> tuple[list[str], list[dict]]:
    """(the notes the student reads, the problems a person should look at) for each failing cell of each notebook's
    module: ``cell_errors`` (the runner's), ``text_of(module)`` (the staged module), ``named(module)`` (how the student
    knows it), ``lost``: the steps that did not earn all their points."""
    notes, problems = [], []
    for module, errors in cell_errors.items():
        text = text_of(module)
        names = [s.split(".", 1)[1] if "." in s else s for s in steps_by_module.get(module, [])]
        for err in errors:
            notes.append(said(named(module), err))
            line = (err.get("where") or {}).get("line")
            changed = affected(text, line, names, {s.split(".", 1)[1] for s in lost if s.startswith(module + ".")}) \
                if text is not None else []
            if changed:
                cell = (err.get("where") or {}).get("cell") or named(module)
                problems.append({"kind": "cell_failed", "module": module, "cell": cell,
                                 "steps": [f"{module}.{s}" for s in changed],
                                 "message": f"{cell} raised while its notebook ran, and these steps use what it "
                                            "defines: graded as it ran, past the failing cell (as nbgrader runs it)"})
    return notes, problems
