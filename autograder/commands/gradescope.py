"""``grade gradescope``: the Gradescope autograder zip (instructor-only: it holds solutions and hidden suites)."""
from __future__ import annotations

from pathlib import Path

from autograder import console
from autograder.course import CourseError
from autograder.gradescope.autograder_zip import build_gradescope
from autograder.usage import UsageError


def main(out: Path = Path("autograder.zip"), course_file: Path = Path("course.yml")) -> int:
    try:
        summary = build_gradescope(out, course_file)
    except (CourseError, LookupError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    console.say(f"wrote {summary['zip']} ({summary['files']} files); upload it as the Gradescope autograder")
    return 0
