"""``grade assign``: exercises/ from solutions/, and the public cases ``grade check`` replays."""
from __future__ import annotations

from pathlib import Path

from autograder import console
from autograder.assign.build import assign as build
from autograder.assign.strip import MarkerError
from autograder.course import CourseError
from autograder.usage import UsageError


def main(course_file: Path = Path("course.yml")) -> int:
    try:
        summary = build(course_file)
    except (CourseError, MarkerError) as exc:
        raise UsageError(str(exc)) from None
    console.say(f"wrote {len(summary['files'])} exercise files and {summary['public_cases']} public cases")
    return 0
