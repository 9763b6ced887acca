"""``grade release --out DIR``: the click command (imports nothing heavy until it runs)."""
from __future__ import annotations

from pathlib import Path

import click


@click.command("release")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Folder for the student bundle (created; a previous bundle there is replaced).")
@click.option("--zip", "zip_path", type=click.Path(path_type=Path), default=None,
              help="Where to write the zip of the bundle [default: OUT.zip next to OUT].")
@click.option("--course", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path),
              show_default=True, help="The course definition.")
def release_command(out: Path, zip_path: Path | None, course_file: Path) -> None:
    """Build the student bundle: exercises, public checks, grade check; no solution, no hidden case."""
    from autograder.course import CourseError  # noqa: PLC0415
    from autograder.release.bundle import build_release  # noqa: PLC0415
    from autograder.release.student_code import ReleaseError  # noqa: PLC0415

    try:
        summary = build_release(out, course_file, zip_path)
    except (ReleaseError, CourseError, LookupError) as exc:
        click.echo(click.style("error: ", fg="red") + str(exc), err=True)
        raise SystemExit(2) from None
    click.echo(f"wrote {summary['files']} files ({summary['cases']} public cases) to {summary['out']}/")
    click.echo(f"archive: {summary['zip']}")
