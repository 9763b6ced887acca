"""Find solution code in a folder about to be shipped to students.

The rule. A *solution line* is a line between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` in
``solutions/*.py``, compared with its whitespace collapsed. It is *secret* unless it is

- blank or a comment,
- bare syntax that any Python file has: only brackets and punctuation (``)``, ``],``), a lone
  keyword statement (``else:``, ``pass``, ``return``, ``try:``, ...) or an idiom that says nothing
  about the answer (``with torch.no_grad():``, which the kit's own code uses too),
- also written outside the solution blocks of the solutions, whole or inside a line (scaffolding
  students see anyway, such as ``super().__init__()``, or a line a docstring quotes as a hint).

A secret line leaks when a line of a shipped text file is that line (whitespace collapsed), however
short: ``return x @ W`` is the whole answer to a step. A secret line of at least ``EMBEDDED_MIN``
characters also leaks when it appears anywhere inside a line or a binary file (pasted in a string,
a JSON value, a safetensors header): shorter fragments are too common to mean anything there.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from autograder.assign.strip import strip_solutions

EMBEDDED_MIN = 24
_SYNTAX_ONLY = re.compile(r"^[\s()\[\]{},:;.\\]*$")
_LONE_KEYWORDS = {"else:", "try:", "finally:", "pass", "return", "break", "continue", "except:", "raise",
                  "return None", "...", '"""', "'''", "with torch.no_grad():", "super().__init__()"}


def normalize(line: str) -> str:
    return " ".join(line.split())


def is_trivial(line: str) -> bool:
    code = normalize(line)
    return not code or code.startswith("#") or bool(_SYNTAX_ONLY.match(code)) or code in _LONE_KEYWORDS


def secret_lines(solutions: Path) -> dict[str, str]:
    """normalized secret line -> ``file:line`` where it is written in the solutions."""
    secrets: dict[str, str] = {}
    public: list[str] = []
    for path in sorted(Path(solutions).glob("*.py")):
        text = path.read_text(encoding="utf-8")
        removed = strip_solutions(text, path.stem, str(path)).solution_lines
        inside = False
        for number, line in enumerate(text.splitlines(), start=1):
            marker = line.strip()
            if marker.startswith("### BEGIN SOLUTION"):
                inside = True
            elif marker.startswith("### END SOLUTION"):
                inside = False
            elif not inside:
                public.append(normalize(line))
            elif not is_trivial(line):
                secrets.setdefault(normalize(line), f"{path.name}:{number}")
        if inside or len(removed) < sum(1 for w in secrets.values() if w.startswith(f"{path.name}:")):
            raise ValueError(f"{path}: solution markers that the stripper reads differently")
    shown = "\n".join(public)
    return {code: where for code, where in secrets.items() if code not in shown}


@dataclass(frozen=True)
class Leak:
    file: str
    line: int  # 0 for a binary file
    solution: str  # where the leaked line is written in solutions/
    code: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: solution line from {self.solution} ({self.code!r})"


def _cells_text(text: str) -> str:
    """The source of every cell of a notebook, one after the other; the text itself if it is no notebook."""
    try:
        cells = json.loads(text).get("cells", [])
        return "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"]) for c in cells)
    except (ValueError, AttributeError, KeyError, TypeError):
        return text


def scan(folder: Path, secrets: dict[str, str]) -> list[Leak]:
    """Every leak of a secret line in the files under ``folder``."""
    folder = Path(folder)
    long_secrets = {code: where for code, where in secrets.items() if len(code) >= EMBEDDED_MIN}
    leaks = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            flat = normalize(data.decode("latin-1"))
            leaks += [Leak(rel, 0, where, code) for code, where in long_secrets.items() if code in flat]
            continue
        if path.suffix == ".ipynb":  # a notebook's cells, not its JSON (where a line is quoted and escaped)
            text = _cells_text(text)
        for number, line in enumerate(text.splitlines(), start=1):
            code = normalize(line)
            if code in secrets:
                leaks.append(Leak(rel, number, secrets[code], code))
                continue
            leaks += [Leak(rel, number, where, s) for s, where in long_secrets.items() if s in code]
    return leaks
