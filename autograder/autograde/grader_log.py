"""``OUT/grader_errors.log``: the grader's own failures (a bug in a suite), kept apart from students' results.

A student whose count hit a grader bug reads "the grader itself failed on this count; please tell your
instructor"; the instructor reads the traceback here, per submission. A re-run replaces the entries of the
submissions it grades again and keeps the others, so the log always describes the results in ``OUT``.

Only the trusted side's own failures are written here: nothing a worker reports (a worker runs the student's code,
and its tracebacks are the student's, shown to that student: ``sandbox/answers.py``).
"""
from __future__ import annotations

import re
from pathlib import Path

NAME = "grader_errors.log"
_HEADER = re.compile(r"^=== (.+) ===$", re.M)


def read(out: Path) -> dict[str, str]:
    try:
        text = (out / NAME).read_text(encoding="utf-8")
    except OSError:
        return {}
    parts = _HEADER.split(text)
    return {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}


def update(out: Path, graded: list[str], errors: dict[str, list[str]]) -> dict[str, str]:
    """Replace the entries of ``graded`` with this run's ``errors`` (the grader's failures); return the grader's
    failures now in the log."""
    entries = {name: text for name, text in read(out).items() if name not in graded}
    entries.update({name: "\n\n".join(found) for name, found in errors.items() if found})
    path = out / NAME
    if entries:
        path.write_text("".join(f"=== {name} ===\n{text}\n\n" for name, text in sorted(entries.items())),
                        encoding="utf-8")
    else:
        path.unlink(missing_ok=True)
    return entries
