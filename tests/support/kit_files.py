"""What a student reads may never name a file of the kit: the kit's file names, and a scan."""
from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

#: every file name of the kit's own code (the worker's runtime.py, child.py..., the suites): none may reach a student
KIT_FILES = sorted({p.name for p in (ROOT / "autograder").rglob("*.py")} - {"__init__.py"})
_KIT = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in KIT_FILES) + r"|autograder/[\w/]+\.py)\b")


def kit_files_named(text: str) -> list[str]:
    """The kit's file names ``text`` names (a file name, or a path under autograder/)."""
    return sorted({m.group(1) for m in _KIT.finditer(text)})


def scan(out: Path) -> dict[str, list[str]]:
    """Every results.json and feedback.html under ``out`` that names a file of the kit: path -> the names."""
    found = {}
    for path in sorted([*out.rglob("results.json"), *out.rglob("feedback.html")]):
        named = kit_files_named(path.read_text(encoding="utf-8", errors="replace"))
        if named:
            found[str(path.relative_to(out))] = named
    return found
