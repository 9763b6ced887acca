"""``OUT/grader_errors.log``: the grader's own failures (a bug in a suite), kept apart from students' results.

A student whose count hit a grader bug reads "the grader itself failed on this count; please tell your
instructor"; the instructor reads the traceback here, per submission. A re-run replaces the entries of the
submissions it grades again and keeps the others, so the log always describes the results in ``OUT``.

It also keeps, under ``=== NAME (calls into the submission) ===``, the grader's frames where a call into a
student's object failed with no frame of the student's code (loading the reference weights into a module
without that parameter, say): the student read what the grader could not do with their object, never a
file of the kit; the instructor reads where, here. Those are not the grader's failures: they do not make a
submission one "the grader itself failed" on.
"""
from __future__ import annotations

import re
from pathlib import Path

NAME = "grader_errors.log"
#: the suffix of an entry holding the grader's frames of calls into a submission (not a grader failure)
CALLS = " (calls into the submission)"
_HEADER = re.compile(r"^=== (.+) ===$", re.M)


def read(out: Path) -> dict[str, str]:
    try:
        text = (out / NAME).read_text(encoding="utf-8")
    except OSError:
        return {}
    parts = _HEADER.split(text)
    return {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}


def update(out: Path, graded: list[str], errors: dict[str, list[str]],
           frames: dict[str, list[str]] | None = None) -> dict[str, str]:
    """Replace the entries of ``graded`` with this run's ``errors`` (the grader's failures) and ``frames``
    (the grader's frames of calls into a submission that failed); return the grader's failures now in the log."""
    entries = {name: text for name, text in read(out).items() if name.removesuffix(CALLS) not in graded}
    entries.update({name: "\n\n".join(found) for name, found in errors.items() if found})
    entries.update({name + CALLS: "\n\n".join(found) for name, found in (frames or {}).items() if found})
    path = out / NAME
    if entries:
        path.write_text("".join(f"=== {name} ===\n{text}\n\n" for name, text in sorted(entries.items())),
                        encoding="utf-8")
    else:
        path.unlink(missing_ok=True)
    return {name: text for name, text in entries.items() if not name.endswith(CALLS)}
