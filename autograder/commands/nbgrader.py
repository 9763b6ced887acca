"""``grade nbgrader``: an nbgrader course (nbgrader_config.py and source/<assignment>/<module>.ipynb)."""
from __future__ import annotations

from pathlib import Path

from autograder import console
from autograder.assign import recorded_from
from autograder.course import CourseError
from autograder.usage import UsageError

from . import course_location


def main(dest: Path, course_file: Path = Path("course.yml"), assignment: str | None = None,
         force: bool = False) -> int:
    if Path(course_file).is_dir():
        raise UsageError(f"course_file={course_file}: a folder; it names the course definition file (course.yml); "
                         "the nbgrader course folder to write is dest (--course-dir)")
    # the notebooks' checks would be other than the bundle's grade check and grading: refused before torch loads
    recorded_from.refuse_if_stale(course_file, then="grade nbgrader again", undone="nothing was written")
    try:
        from autograder.nbgrader_course.course_dir import CourseDirError, write_course
    except ImportError as exc:
        raise UsageError(f"grade nbgrader needs nbformat ({exc}): pip install -e '.[test]', "
                         "or pip install 'nbgrader>=0.9'") from None
    try:
        summary = write_course(course_file, dest, assignment=assignment, force=force)
    except (CourseError, CourseDirError) as exc:
        raise UsageError(str(exc)) from None
    # so that grade commands run from the course folder find this course.yml (grade autograde --nbgrader .)
    record = course_location.write_record(dest, course_file)
    kept = _keep_reference_answers(course_file)
    for module, points in summary["points"].items():
        console.say(f"{summary['folder'] / (module + '.ipynb')}: {points:g} points")
    console.say(f"{sum(summary['points'].values()):g} of {summary['total']:g} points in {len(summary['points'])} "
                f"notebooks; next, in {dest}: nbgrader generate_assignment {summary['assignment']}")
    console.say(f"{record}: the course.yml these notebooks came from ({Path(course_file).resolve()}), for grade "
                "commands run in that folder")
    if kept:
        console.say(f"the reference's answers to the course's {kept[0]} cases: kept in {kept[1]} for grade autograde")
    console.warn("nbgrader autograde runs student code beside the checks in one kernel, unsandboxed: a notebook "
                 "can patch the checks and award itself points. For untrusted students grade the collected "
                 f"notebooks, from {dest}, with: grade autograde --nbgrader . --out results (docs/nbgrader.md)")
    return 0


def _keep_reference_answers(course_file: Path) -> tuple[int, Path] | None:
    """The reference's answer to every hidden case, computed now, as the course is built, and kept for every
    ``grade autograde`` of it (grading/suites/stored_answers.py), rather than at the start of its first batch.
    How many cases, and where; None where nothing is kept (``GRADE_REFERENCE_CACHE=0``, a folder not writable)."""
    from autograder.grading.suites import stored_answers
    from autograder.grading.suites.session import Grader

    if stored_answers.folder() is None:
        return None
    with Grader(course_file) as grader:
        grader.warm_cache()
        return (len(grader.cache), grader.kept_answers.parent) if grader.kept_answers else None
