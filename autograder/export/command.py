"""``grade export``: results.json files + roster -> a gradebook file Canvas or Moodle imports as is."""
from __future__ import annotations

import sys
from pathlib import Path

import click

FORMATS = ("canvas", "moodle", "csv")


def _fail(message: str) -> None:
    click.echo(click.style("error: ", fg="red") + message, err=True)
    sys.exit(2)


@click.command("export")
@click.option("--results", "results_dir", required=True, metavar="DIR", type=click.Path(path_type=Path),
              help="The folder grade autograde wrote: DIR/<submission name>/results.json.")
@click.option("--roster", "roster_file", required=True, metavar="FILE", type=click.Path(path_type=Path),
              help="Class list CSV (name, email, login, id, sis_id, section; see docs/export.md).")
@click.option("--format", "fmt", required=True, type=click.Choice(FORMATS), help="The gradebook file to write.")
@click.option("--out", "out", metavar="FILE", type=click.Path(path_type=Path), help="Write the file here (default: standard output).")
@click.option("--course", "course_file", default=Path("course.yml"), metavar="FILE",
              type=click.Path(path_type=Path),
              show_default=True, help="The course definition (points and late_policy).")
@click.option("--assignment", help="Title of the grade column (default: course.yml's title). "
                                   "Canvas: 'Title (assignment id)' updates that assignment.")
@click.option("--points", metavar="N", type=click.FloatRange(min=0, min_open=True),
              help="Rescale scores so that a full score is worth this much (default: course.yml's points).")
@click.option("--missing", type=click.Choice(["blank", "zero"]), default="blank", show_default=True,
              help="Roster students without a submission: no grade, or 0.")
@click.option("--times", "times_file", metavar="FILE", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="CSV 'submission,submitted_at' from the LMS: these times win over the ones in results.json.")
@click.option("--moodle-user", type=click.Choice(["email", "idnumber", "username"]), default="email",
              show_default=True, help="Moodle format: the user field the first column holds.")
def export_command(results_dir: Path, roster_file: Path, fmt: str, out: Path | None, course_file: Path,
                   assignment: str | None, points: float | None, missing: str, moodle_user: str,
                   times_file: Path | None = None) -> None:
    """Write the grades of DIR's results.json files as a Canvas, Moodle or plain CSV gradebook file."""
    import io  # noqa: PLC0415

    from autograder.course import CourseError, load_course  # noqa: PLC0415

    from . import gradebook, report  # noqa: PLC0415
    from .formats import WRITERS, ExportOptions  # noqa: PLC0415
    from .late_policy import describe  # noqa: PLC0415
    from .read_results import read_dir  # noqa: PLC0415
    from .roster import RosterError, read_roster  # noqa: PLC0415

    try:
        course = load_course(course_file)
    except CourseError as exc:
        _fail(str(exc))
    try:
        students = read_roster(roster_file)
    except RosterError as exc:
        _fail(str(exc))
    if not results_dir.is_dir():
        _fail(f"{results_dir}: no such folder (give the --out folder of grade autograde)")
    submissions, unreadable = read_dir(results_dir)
    if times_file:
        import dataclasses  # noqa: PLC0415
        from datetime import datetime  # noqa: PLC0415

        from autograder.intake import times  # noqa: PLC0415

        try:
            when = times.read(times_file)
        except times.TimesError as exc:
            _fail(str(exc))
        submissions = [dataclasses.replace(s, submitted_at=datetime.fromisoformat(when[s.name])) if s.name in when
                       else s for s in submissions]
    if not submissions and not unreadable:
        _fail(f"{results_dir}: no submission folder in it (expected {results_dir}/<name>/results.json)")

    course_points = course.max_points()
    options = ExportOptions(assignment=assignment or course.title, points=points or course_points,
                            course_points=course_points, missing=missing, moodle_user=moodle_user)
    book = gradebook.build(students, submissions, unreadable, course.late_policy, course_points)

    say = lambda line: click.echo(line, err=True)  # noqa: E731
    warn = lambda line: click.echo(click.style("warning: ", fg="yellow") + line, err=True)  # noqa: E731
    say(f"late policy: {describe(course.late_policy)}")
    if not book.graded:
        for line in report.warnings(book, options, fmt):
            warn(line)
        click.echo(click.style("error: ", fg="red") + f"no submission in {results_dir} matches a student of "
                   f"{roster_file}; nothing written (is it the right roster?)", err=True)
        sys.exit(1)

    buffer = io.StringIO()
    notes = WRITERS[fmt](book, options, buffer)
    if out is None:
        sys.stdout.write(buffer.getvalue())
        sys.stdout.flush()
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(buffer.getvalue(), encoding="utf-8", newline="")
    for line in report.summary(book, options, fmt):
        say(line)
    for line in [*report.warnings(book, options, fmt), *notes]:
        warn(line)
    if out is not None:
        say(f"wrote {out} ({fmt})")
