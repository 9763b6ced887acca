"""Strip solution code between markers, leaving a stub that raises NotImplementedError.

Markers follow nbgrader's convention, as Python comments::

    ### BEGIN SOLUTION
    ...solution lines...
    ### END SOLUTION

Each block becomes one ``raise NotImplementedError(...)`` line at the marker's indentation. A function
or method whose body held several blocks keeps only the first raise: the rest would be unreachable.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

BEGIN = re.compile(r"^(?P<indent>[ \t]*)### BEGIN SOLUTION[ \t]*$")
END = re.compile(r"^[ \t]*### END SOLUTION[ \t]*$")
STUB = 'raise NotImplementedError("{step}: not attempted yet")'


class MarkerError(ValueError):
    """A solution file whose markers do not pair up."""


@dataclass(frozen=True)
class Stripped:
    text: str
    solution_lines: list[str]  # every line that sat between markers, as written


def strip_solutions(source: str, module: str, filename: str = "<source>") -> Stripped:
    """Return the student version of ``source`` and the solution lines it removed."""
    out: list[str] = []
    removed: list[str] = []
    inside = False
    begin_line = 0
    indent = ""
    for lineno, line in enumerate(source.splitlines(keepends=True), start=1):
        begin = BEGIN.match(line.rstrip("\n"))
        if begin:
            if inside:
                raise MarkerError(f"{filename}:{lineno}: BEGIN SOLUTION inside the block opened at line {begin_line}")
            inside, begin_line, indent = True, lineno, begin.group("indent")
            continue
        if END.match(line.rstrip("\n")):
            if not inside:
                raise MarkerError(f"{filename}:{lineno}: END SOLUTION without a BEGIN SOLUTION")
            inside = False
            out.append(f"{indent}{STUB.format(step=_step_at(out, module))}\n")
            continue
        if inside:
            removed.append(line.rstrip("\n"))
        else:
            out.append(line)
    if inside:
        raise MarkerError(f"{filename}:{begin_line}: BEGIN SOLUTION is never closed")
    return Stripped("".join(out), removed)


_DEF = re.compile(r"^(?P<indent>[ \t]*)(?:def|class)\s+(?P<name>\w+)")


def _step_at(lines_so_far: list[str], module: str) -> str:
    """The step id (``module.name``) of the innermost top-level def/class the stub lands in."""
    for line in reversed(lines_so_far):
        match = _DEF.match(line)
        if match and not match.group("indent"):
            return f"{module}.{match.group('name')}"
    return module


def strip_tree(solutions: Path, exercises: Path) -> dict[str, Stripped]:
    """Write the stripped version of every ``*.py`` in ``solutions`` into ``exercises``."""
    exercises.mkdir(parents=True, exist_ok=True)
    result = {}
    for path in sorted(solutions.glob("*.py")):
        stripped = strip_solutions(path.read_text(encoding="utf-8"), path.stem, str(path))
        (exercises / path.name).write_text(stripped.text, encoding="utf-8")
        result[path.name] = stripped
    return result
