"""Which other steps a step's code refers to: only their stand-ins are sent to its worker.

A worker holds reference code only for the steps the graded step actually uses (the wrapper's
``CausalAttention``, a class calling its own ``scaled_attention_weights``), found by name in the
student's code of that step and of the top-level helpers it calls, and in the stand-ins themselves.
A step that uses no other step gets no reference code at all.
"""
from __future__ import annotations

import ast
from pathlib import Path


def _names(node: ast.AST) -> set[str]:
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
    return names


def top_level(source: str) -> dict[str, ast.AST]:
    """Top-level functions and classes of ``source`` (untrusted: parsing never runs it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


class StudentCode:
    """The staged submission's top-level definitions, parsed once per submission."""

    def __init__(self, folder: Path, modules: list[str]):
        self.defs: dict[tuple[str, str], ast.AST] = {}
        for module in modules:
            path = Path(folder) / f"{module}.py"
            try:
                source = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for name, node in top_level(source).items():
                self.defs[(module, name)] = node
        self._names = {key: _names(node) for key, node in self.defs.items()}

    def uses(self, step: str) -> set[str]:
        """Names used by the step's definition and, transitively, by the top-level helpers it calls."""
        seen, todo, used = set(), [tuple(step.split(".", 1))], set()
        while todo:
            current = todo.pop()
            if current in seen or current not in self.defs:
                continue
            seen.add(current)
            found = self._names[current]
            used |= found
            todo += [key for key in self.defs if key[1] in found]
        return used


def standins_for(step: str, student: StudentCode, reference_uses: dict[str, set[str]]) -> list[str]:
    """The steps (other than ``step``) whose stand-ins the worker for ``step`` needs, in unit order."""
    by_name: dict[str, list[str]] = {}
    for s in reference_uses:
        by_name.setdefault(s.split(".", 1)[1], []).append(s)
    wanted = {s for n in student.uses(step) for s in by_name.get(n, [])}
    todo = list(wanted)
    while todo:  # a stand-in may itself use others (the reference wrapper uses CausalAttention)
        for name in reference_uses[todo.pop()]:
            for other in by_name.get(name, []):
                if other not in wanted:
                    wanted.add(other)
                    todo.append(other)
    wanted.discard(step)
    return [s for s in reference_uses if s in wanted]
