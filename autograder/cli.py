"""``grade``: the kit's command line (check, autograde, assign)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click


def _fail(message: str) -> None:
    click.echo(click.style("error: ", fg="red") + message, err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Autograded exercises for attention mechanisms (chapter 3 of Build a Large Language Model)."""


@main.command()
@click.argument("path", type=click.Path(path_type=Path), default=Path("exercises"))
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON, for machines.")
@click.option("--step", "steps", multiple=True, help="Only this step (module.name) or module; repeatable.")
def check(path: Path, as_json: bool, steps: tuple[str, ...]) -> None:
    """Check your exercises (default ./exercises) against the public cases of the course documents."""
    from autograder.grading.workers import LocalZygote  # noqa: PLC0415 - imports torch

    if not path.is_dir():
        _fail(f"{path}: no such folder (run grade check from the folder that holds exercises/, or name it)")
    zygote = LocalZygote()
    try:
        from autograder.check import public_cases, report  # noqa: PLC0415
        from autograder.check.run import run_check  # noqa: PLC0415

        try:
            data = public_cases.load()
        except FileNotFoundError as exc:
            _fail(str(exc))
        modules = data["modules"]
        if not any((path / f"{m}.py").exists() for m in modules):
            _fail(f"{path}: none of {', '.join(m + '.py' for m in modules)} is here")
        results = run_check(path.resolve(), data, zygote, list(steps) or None)
    finally:
        zygote.close()
    if as_json:
        click.echo(json.dumps(report.as_json(results), indent=2))
    else:
        click.echo(report.table(results, color=sys.stdout.isatty()))
        text = report.details(results)
        if text:
            click.echo(text)
    sys.exit(0 if all(r.status == "passed" for r in results) else 1)


@main.command()
@click.argument("submissions", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Write DIR/<name>/results.json.")
@click.option("--course", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path),
              show_default=True, help="The course definition.")
def autograde(submissions: tuple[Path, ...], out: Path, course_file: Path) -> None:
    """Grade SUBMISSIONS (folders, or folders of them) with the hidden suites."""
    from autograder.course import CourseError  # noqa: PLC0415
    from autograder.grade import results  # noqa: PLC0415
    from autograder.grade.session import Grader  # noqa: PLC0415
    from autograder.grade.submissions import discover  # noqa: PLC0415

    try:
        grader = Grader(course_file)
    except CourseError as exc:
        _fail(str(exc))
    with grader:
        found, problems = discover(list(submissions), grader.course.modules)
        for problem in problems:
            click.echo(click.style("skipped: ", fg="yellow") + problem, err=True)
        if not found:
            _fail("no submission to grade")
        top = grader.course.max_points()
        start = time.monotonic()
        for sub in found:
            result = grader.grade(sub.folder)
            results.write_atomic(out / sub.name / "results.json", result)
            click.echo(f"{sub.name}: {result['score']:g}/{top:g}")
        click.echo(f"graded {len(found)} submission(s) in {time.monotonic() - start:.1f} s; results in {out}/")


@main.command()
@click.option("--course", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path), show_default=True)
def assign(course_file: Path) -> None:
    """Write exercises/ from solutions/ and record the public cases for grade check."""
    from autograder.assign.build import assign as build  # noqa: PLC0415
    from autograder.assign.strip import MarkerError  # noqa: PLC0415
    from autograder.course import CourseError  # noqa: PLC0415

    try:
        summary = build(course_file)
    except (CourseError, MarkerError) as exc:
        _fail(str(exc))
    click.echo(f"wrote {len(summary['files'])} exercise files and {summary['public_cases']} public cases")


if __name__ == "__main__":  # pragma: no cover
    main()
