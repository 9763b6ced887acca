"""A copy of the course whose step time limit is short, for a class with an infinite loop or a print loop in it:
such a step costs its time limit in CPU (a core spinning), so 6 s instead of the course's 20 s is what keeps those
tests cheap. What they check (the step ends at its limit, is said as a time limit, costs that step alone) is the same
at any limit. The copy's public cases are recorded again (``recorded_cases.py``): its limits are another course's."""
from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import ROOT
from tests.support.recorded_cases import record

#: the course's own step limit, as course.yml says it (the copy replaces this text)
COURSE_LIMIT = "  step_seconds: 20 "


#: the copy's step limit
STEP_SECONDS = 6


def short_course(folder: Path, step_seconds: int = STEP_SECONDS) -> Path:
    """``folder/course.yml``: the course with ``step_seconds`` as its step time limit, its solutions, suites and
    public cases beside it; the path of that course.yml."""
    folder.mkdir()
    text = (ROOT / "course.yml").read_text(encoding="utf-8")
    assert COURSE_LIMIT in text
    (folder / "course.yml").write_text(text.replace(COURSE_LIMIT, f"  step_seconds: {step_seconds} ", 1),
                                       encoding="utf-8")
    shutil.copytree(ROOT / "solutions", folder / "solutions")
    shutil.copytree(ROOT / "autograder" / "unit" / "suites", folder / "autograder" / "unit" / "suites")
    record(folder / "course.yml")
    return folder / "course.yml"
