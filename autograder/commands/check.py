"""``grade check``: a student's exercises against the public cases of the course documents."""
from __future__ import annotations

import difflib
import json
from pathlib import Path

from . import console
from .usage import UsageError


def main(path: Path = Path("exercises"), steps: tuple[str, ...] = (), as_json: bool = False,
         color: bool = False, html_file: Path | None = None) -> int:
    """Check the exercise files in ``path`` (a folder, or one module file); 0 when every check passes.

    ``html_file``: also write the feedback page there (the page grade autograde writes), and say where."""
    from autograder.check import public_cases  # noqa: PLC0415

    path, steps = _folder(Path(path), tuple(steps))
    try:
        data = public_cases.load()
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    _known_steps(steps, data)
    modules = data["modules"]
    if not any((path / f"{m}.py").exists() for m in modules):
        raise UsageError(f"{path}: none of {', '.join(m + '.py' for m in modules)} is here")
    results = run(path, data, list(steps) or None)

    from autograder.check import report  # noqa: PLC0415

    if as_json:
        console.say(json.dumps(report.as_json(results), indent=2))
    else:
        console.say(report.table(results, color=color))
        text = report.details(results, color=color)
        if text:
            console.say(text)
    if html_file:
        from autograder.check.page import write_page  # noqa: PLC0415

        written = write_page(results, path, Path(html_file))
        (console.note if as_json else console.say)(f"feedback page: {written}")
    return 0 if results and all(r.status == "passed" for r in results) else 1


def run(path: Path, data: dict, steps: list[str] | None):
    """The check results of the exercises in folder ``path``, from a zygote started for this run."""
    from autograder.check.run import run_check  # noqa: PLC0415
    from autograder.grading.zygote_client import LocalZygote  # noqa: PLC0415 - imports torch

    zygote = LocalZygote()
    try:
        return run_check(path.resolve(), data, zygote, steps)
    finally:
        zygote.close()


def _folder(path: Path, steps: tuple[str, ...]) -> tuple[Path, tuple[str, ...]]:
    if path.is_file() and path.suffix == ".py":  # one module: check it, in its folder
        console.note(f"checking {path.stem} in {path.parent}/ (grade check takes a folder; this is the file's)")
        return path.parent, steps or (path.stem,)
    if path.is_file():
        raise UsageError(f"{path}: grade check takes the folder that holds your exercise files (such as "
                         "exercises/), not a single file")
    if not path.is_dir():
        raise UsageError(f"{path}: no such folder (run grade check from the folder that holds exercises/, or name it)")
    return path, steps


def _known_steps(steps: tuple[str, ...], data: dict) -> None:
    known = list(data["steps"]) + data["modules"]
    for step in steps:
        if step not in known:
            near = difflib.get_close_matches(step, known, n=3, cutoff=0.5) or \
                [k for k in known if k.endswith("." + step)]
            raise UsageError(f"--step {step}: no such step or module" +
                             (f" (did you mean {', '.join(near)}?)" if near
                              else f"; the modules are {', '.join(data['modules'])}"))
