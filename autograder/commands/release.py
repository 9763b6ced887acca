"""``grade release``: the student bundle (exercises, public checks, grade check; no solution, no hidden case)."""
from __future__ import annotations

from pathlib import Path

from autograder import console
from autograder.course import CourseError
from autograder.release.bundle import build_release
from autograder.release.student_code import ReleaseError
from autograder.usage import UsageError


def main(out: Path, zip_path: Path | None = None, course_file: Path = Path("course.yml")) -> int:
    try:
        summary = build_release(out, course_file, zip_path)
    except (ReleaseError, CourseError, LookupError) as exc:
        raise UsageError(str(exc)) from None
    console.say(f"wrote {summary['files']} files ({summary['cases']} public cases) to {summary['out']}/")
    console.say(f"archive: {summary['zip']}")
    return 0
