"""``grade nbgrader``: an nbgrader course (nbgrader_config.py and source/<assignment>/<module>.ipynb)."""
from __future__ import annotations

from pathlib import Path

from . import console
from .usage import UsageError


def main(dest: Path, course_file: Path = Path("course.yml"), assignment: str | None = None,
         force: bool = False) -> int:
    from autograder.course import CourseError  # noqa: PLC0415

    try:
        from autograder.nbgrader_course.course_dir import CourseDirError, write_course  # noqa: PLC0415 - torch
    except ImportError as exc:
        raise UsageError(f"grade nbgrader needs nbformat ({exc}): pip install -e '.[test]', "
                         "or pip install 'nbgrader>=0.9'") from None
    try:
        summary = write_course(course_file, dest, assignment=assignment, force=force)
    except (CourseError, CourseDirError) as exc:
        raise UsageError(str(exc)) from None
    for module, points in summary["points"].items():
        console.say(f"{summary['folder'] / (module + '.ipynb')}: {points:g} points")
    console.say(f"{sum(summary['points'].values()):g} of {summary['total']:g} points in {len(summary['points'])} "
                f"notebooks; next, in {dest}: nbgrader generate_assignment {summary['assignment']}")
    console.warn("nbgrader autograde runs student code beside the checks in one kernel, unsandboxed: a notebook "
                 "can patch the checks and award itself points. For untrusted students grade the collected "
                 f"notebooks with: grade autograde --nbgrader {dest} --out results (docs/nbgrader.md)")
    return 0
