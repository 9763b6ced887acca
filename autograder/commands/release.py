"""``grade release``: the student bundle (exercises, public checks, grade check; no solution, no hidden case)."""
from __future__ import annotations

from pathlib import Path

from . import console
from .usage import UsageError


def main(out: Path, zip_path: Path | None = None, course_file: Path = Path("course.yml")) -> int:
    from autograder.course import CourseError  # noqa: PLC0415
    from autograder.release.bundle import build_release  # noqa: PLC0415
    from autograder.release.student_code import ReleaseError  # noqa: PLC0415

    try:
        summary = build_release(out, course_file, zip_path)
    except (ReleaseError, CourseError, LookupError) as exc:
        raise UsageError(str(exc)) from None
    console.say(f"wrote {summary['files']} files ({summary['cases']} public cases) to {summary['out']}/")
    console.say(f"archive: {summary['zip']}")
    return 0
