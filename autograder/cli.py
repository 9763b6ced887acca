"""``grade``: the kit's command line (check, autograde, assign)."""
from __future__ import annotations

import json
import sys
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
    from autograder.grading.zygote_client import LocalZygote  # noqa: PLC0415 - imports torch

    import difflib  # noqa: PLC0415

    if path.is_file() and path.suffix == ".py":  # one module: check it, in its folder
        steps = steps or (path.stem,)
        click.echo(f"checking {path.stem} in {path.parent}/ (grade check takes a folder; this is the file's)", err=True)
        path = path.parent
    elif path.is_file():
        _fail(f"{path}: grade check takes the folder that holds your exercise files (such as exercises/), "
              "not a single file")
    elif not path.is_dir():
        _fail(f"{path}: no such folder (run grade check from the folder that holds exercises/, or name it)")
    from autograder.check import public_cases  # noqa: PLC0415

    try:
        data = public_cases.load()
    except FileNotFoundError as exc:
        _fail(str(exc))
    known = list(data["steps"]) + data["modules"]
    for step in steps:
        if step not in known:
            near = difflib.get_close_matches(step, known, n=3, cutoff=0.5) or \
                [k for k in known if k.endswith("." + step)]
            _fail(f"--step {step}: no such step or module" +
                  (f" (did you mean {', '.join(near)}?)" if near else f"; the modules are {', '.join(data['modules'])}"))
    zygote = LocalZygote()
    try:
        from autograder.check import report  # noqa: PLC0415
        from autograder.check.run import run_check  # noqa: PLC0415

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
    sys.exit(0 if results and all(r.status == "passed" for r in results) else 1)


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


from autograder.autograde.command import autograde_command  # noqa: E402

main.add_command(autograde_command)

from autograder.export.command import export_command  # noqa: E402

main.add_command(export_command)


from autograder.release.command import release_command  # noqa: E402

main.add_command(release_command)

from autograder.gradescope.command import gradescope_command  # noqa: E402

main.add_command(gradescope_command)

from autograder.nbgrader_course.command import nbgrader_command  # noqa: E402

main.add_command(nbgrader_command)


if __name__ == "__main__":  # pragma: no cover
    main()
