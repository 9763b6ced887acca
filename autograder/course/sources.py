"""Split a reference solution file into what the notebook cells hold: imports, and one piece per name."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ModuleSource:
    docstring: str
    imports: list[str]                       # plain imports ("import torch"), for the setup cell
    borrowed: list[tuple[str, str]]          # (module, name) taken from a sibling module of solutions/
    pieces: dict[str, str] = field(default_factory=dict)  # top-level name -> its source, decorators included
    docstrings: dict[str, str] = field(default_factory=dict)


def _end(lines: list[str], end: int) -> int:
    """The last line of a definition, with the indented comments that follow its last statement
    (``### END SOLUTION`` closes a body but is not part of the syntax tree)."""
    last = end
    for i in range(end, len(lines)):
        line = lines[i]
        if line.strip() and not (line[:1].isspace() and line.strip().startswith("#")):
            break
        if line.strip():
            last = i + 1
    return last


def read_module(path: Path) -> ModuleSource:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text, filename=str(path))
    found = ModuleSource(ast.get_docstring(tree) or "", [], [])
    pending: list[str] = []  # top-level code that is not a def or class: kept with the next piece
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant) \
                and node is tree.body[0]:
            continue  # the module docstring
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            found.borrowed += [(node.module or "", alias.name) for alias in node.names]
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.imports.append(ast.get_source_segment(text, node))
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        piece = "\n".join(lines[start - 1:_end(lines, node.end_lineno)])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.pieces[node.name] = "\n\n".join(pending + [piece])
            found.docstrings[node.name] = ast.get_docstring(node) or ""
            pending = []
        else:
            pending.append(piece)
    if pending:  # trailing top-level code: with the last piece
        last = list(found.pieces)[-1]
        found.pieces[last] = "\n\n".join([found.pieces[last], *pending])
    return found


def with_borrowed(source: ModuleSource, folder: Path) -> tuple[list[str], dict[str, tuple[list[str], list[str]]]]:
    """The imports a notebook of ``source`` needs (its own, then those of the sibling modules it borrows from), and
    what it borrows: sibling module -> (the names, their pieces read from ``folder``), in the order borrowed."""
    names: dict[str, list[str]] = {}
    for other, name in source.borrowed:
        names.setdefault(other, []).append(name)
    imports = list(source.imports)
    borrowed = {}
    for other, wanted in names.items():
        theirs = read_module(folder / f"{other}.py")
        imports += [i for i in theirs.imports if i not in imports]
        borrowed[other] = (wanted, [theirs.pieces[n] for n in wanted])
    return imports, borrowed
