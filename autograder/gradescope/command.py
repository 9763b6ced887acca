"""``grade gradescope --out autograder.zip``: the click command (imports nothing heavy until it runs)."""
from __future__ import annotations

from pathlib import Path

import click


@click.command("gradescope")
@click.option("--out", "out", default=Path("autograder.zip"), type=click.Path(path_type=Path), show_default=True,
              help="Where to write the autograder zip to upload to Gradescope.")
@click.option("--course", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path),
              show_default=True, help="The course definition.")
def gradescope_command(out: Path, course_file: Path) -> None:
    """Build the Gradescope autograder zip (instructor-only: it holds the solutions and hidden suites)."""
    from autograder.course import CourseError  # noqa: PLC0415
    from autograder.gradescope.build import build_gradescope  # noqa: PLC0415

    try:
        summary = build_gradescope(out, course_file)
    except (CourseError, LookupError, ValueError, OSError) as exc:
        click.echo(click.style("error: ", fg="red") + str(exc), err=True)
        raise SystemExit(2) from None
    click.echo(f"wrote {summary['zip']} ({summary['files']} files); upload it as the Gradescope autograder")
