"""``grade export``: results.json files + roster -> a gradebook file Canvas or Moodle imports as is."""
from __future__ import annotations

import dataclasses
import io
import sys
from datetime import datetime
from pathlib import Path

from autograder import console
from autograder.course import CourseError, load_course
from autograder.export import gradebook, report
from autograder.export.formats import WRITERS, ExportOptions
from autograder.export.late_policy import describe
from autograder.export.read_results import read_dir
from autograder.export.roster import RosterError, read_roster
from autograder.intake import times
from autograder.usage import UsageError


FORMATS = ("canvas", "moodle", "csv")


def main(results_dir: Path, roster_file: Path, fmt: str, out: Path | None = None,
         course_file: Path = Path("course.yml"), assignment: str | None = None, points: float | None = None,
         missing: str = "blank", moodle_user: str = "email", times_file: Path | None = None,
         ungraded: str = "blank") -> int:
    """Write the grades of ``results_dir``'s results.json files as a ``fmt`` gradebook (to ``out`` or stdout).

    ``ungraded``: a hand-in the kit never graded (export/ungraded.py) is left ``blank`` unless a person decided
    (decision.json), or given the kit's score with ``zero``; either way the report names each."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt}: the formats are {', '.join(FORMATS)}")
    try:
        course = load_course(course_file)
        students = read_roster(roster_file)
    except (CourseError, RosterError) as exc:
        raise UsageError(str(exc)) from None
    if not results_dir.is_dir():
        raise UsageError(f"{results_dir}: no such folder (give the --out folder of grade autograde)")
    submissions, unreadable = read_dir(results_dir)
    if times_file:
        when = _times(times_file)
        submissions = [dataclasses.replace(s, submitted_at=datetime.fromisoformat(when[s.name])) if s.name in when
                       else s for s in submissions]
    if not submissions and not unreadable:
        raise UsageError(f"{results_dir}: no submission folder in it (expected {results_dir}/<name>/results.json)")

    course_points = course.max_points()
    options = ExportOptions(assignment=assignment or course.title, points=points or course_points,
                            course_points=course_points, missing=missing, moodle_user=moodle_user, ungraded=ungraded)
    book = gradebook.build(students, submissions, unreadable, course.late_policy, course_points, ungraded)
    console.note(f"late policy: {describe(course.late_policy)}")
    if not book.handed_in:
        for line in report.warnings(book, options, fmt):
            console.warn(line)
        console.error(f"no submission in {results_dir} matches a student of {roster_file}; nothing written "
                      "(is it the right roster?)")
        return 1

    buffer = io.StringIO()
    notes = WRITERS[fmt](book, options, buffer)
    if out is None:
        sys.stdout.write(buffer.getvalue())
        sys.stdout.flush()
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(buffer.getvalue(), encoding="utf-8", newline="")
    for line in report.summary(book, options, fmt):
        console.note(line)
    for line in [*report.warnings(book, options, fmt), *notes]:
        console.warn(line)
    if out is not None:
        console.note(f"wrote {out} ({fmt})")
    return 0


def _times(times_file: Path) -> dict[str, str]:
    try:
        return times.read(times_file)
    except times.TimesError as exc:
        raise UsageError(str(exc)) from None
