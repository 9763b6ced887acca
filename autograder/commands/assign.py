"""``grade assign``: exercises/ from solutions/, and the public cases ``grade check`` replays."""
from __future__ import annotations

from pathlib import Path

from . import console
from .usage import UsageError


def main(course_file: Path = Path("course.yml")) -> int:
    from autograder.assign.build import assign as build  # noqa: PLC0415
    from autograder.assign.strip import MarkerError  # noqa: PLC0415
    from autograder.course import CourseError  # noqa: PLC0415

    try:
        summary = build(course_file)
    except (CourseError, MarkerError) as exc:
        raise UsageError(str(exc)) from None
    console.say(f"wrote {len(summary['files'])} exercise files and {summary['public_cases']} public cases")
    return 0
