"""``grade assign``: write ``exercises/`` from ``solutions/`` and record the public cases."""
from __future__ import annotations

from pathlib import Path

from autograder.check import public_cases
from autograder.course import load_course
from autograder.grading.suites.suite_runner import validate_suites
from autograder.grading.suites.reference import Reference

from . import recorded_from
from .record import record_public_cases
from .strip import strip_tree


def assign(course_file: Path, exercises: Path | None = None, cases_dir: Path | None = None) -> dict:
    course_file = Path(course_file).resolve()
    course = load_course(course_file)
    root = course_file.parent
    solutions = root / course.solutions
    stripped = strip_tree(solutions, exercises or root / course.exercises)
    reference = Reference(solutions, course.modules, list(course.steps))
    suites = root / course.suites
    validate_suites(course, suites, reference)
    data = record_public_cases(course, reference, suites)
    folder = cases_dir or recorded_from.cases_folder(course_file)
    public_cases.save(data, folder)
    # what they were recorded from: grade release, gradescope, nbgrader and autograde compare it with what is there
    recorded_from.stamp(folder, recorded_from.sources(course_file, course))
    return {"files": sorted(stripped), "public_cases": len(data["cases"])}
