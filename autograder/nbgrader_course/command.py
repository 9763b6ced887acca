"""The ``grade nbgrader`` command (registered in autograder/cli.py); it imports torch only when run."""
from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("nbgrader")
@click.option("--course", "dest", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The nbgrader course directory to write (created if missing).")
@click.option("--course-file", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path),
              show_default=True, help="The course definition.")
@click.option("--assignment", default=None, help="The assignment name (default: the unit in course.yml).")
@click.option("--force", is_flag=True, help="Overwrite source/<assignment>/ and nbgrader_config.py.")
def nbgrader_command(dest: Path, course_file: Path, assignment: str | None, force: bool) -> None:
    """Write an nbgrader course: DIR/nbgrader_config.py and DIR/source/<assignment>/<module>.ipynb."""
    from autograder.course import CourseError  # noqa: PLC0415

    try:
        from autograder.nbgrader_course.course_dir import CourseDirError, write_course  # noqa: PLC0415 - torch
    except ImportError as exc:
        click.echo(click.style("error: ", fg="red") + f"grade nbgrader needs nbformat ({exc}): "
                   "pip install -e '.[test]', or pip install 'nbgrader>=0.9'", err=True)
        sys.exit(2)

    try:
        summary = write_course(course_file, dest, assignment=assignment, force=force)
    except (CourseError, CourseDirError) as exc:
        click.echo(click.style("error: ", fg="red") + str(exc), err=True)
        sys.exit(2)
    for module, points in summary["points"].items():
        click.echo(f"{summary['folder'] / (module + '.ipynb')}: {points:g} points")
    click.echo(f"{sum(summary['points'].values()):g} of {summary['total']:g} points in {len(summary['points'])} "
               f"notebooks; next, in {dest}: nbgrader generate_assignment {summary['assignment']}")
    click.echo(click.style("warning: ", fg="yellow") + "nbgrader autograde runs student code beside the checks in one "
               "kernel, unsandboxed: a notebook can patch the checks and award itself points. For untrusted students "
               f"grade the collected notebooks with: grade autograde --nbgrader {dest} --out results "
               "(docs/nbgrader.md)")
