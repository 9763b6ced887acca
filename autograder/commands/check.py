"""``grade check``: a student's exercises against the public cases of the course documents."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from autograder import console
from autograder.check import warm_server
from autograder.check.cells import name_cells
from autograder.check.steps import known_steps
from autograder.usage import UsageError


DEFAULT_FOLDER = Path("exercises")
PAGE = "feedback.html"


def main(path: Path | None = None, steps: tuple[str, ...] = (), as_json: bool = False,
         color: bool = False, html_file: Path | bool | None = None, watch: bool = False) -> int:
    """Check the exercises in ``path``; 0 when every check passes. ``path``: what ``grade autograde`` takes (a
    folder of module files, one notebook per module, one notebook for all modules, a .zip), or one module file.

    ``path`` None: ./exercises, or the current folder when it holds the exercise files itself.
    ``html_file``: also write the feedback page (the page grade autograde writes), and say where;
    ``True``: to ``feedback.html`` here, or beside the checked folder when run inside it (``page_path``).
    ``watch``: check again after each save, from this warm process, until Ctrl-C (``check/watch.py``).

    A check answered by the warm server (``check/warm_server.py``) loads no torch here; one checked here leaves
    that server behind for the next."""
    warm = not watch and warm_server.enabled()
    if warm:
        code = warm_server.run_served({"path": None if path is None else str(path), "steps": list(steps),
                                  "as_json": as_json, "color": color,
                                  "html_file": html_file if html_file is None or isinstance(html_file, bool)
                                  else str(html_file)})
        if code is not None:
            return code
    from autograder import long_lived  # noqa: PLC0415 - imported on first use: a served check needs none of it

    try:
        with long_lived.loading():
            from autograder.check import public_cases  # noqa: PLC0415 - imported on first use: torch is slow to load

            data = public_cases.load()
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    modules = data["modules"]
    path = _default_folder(modules) if path is None else Path(path)
    if not watch:
        code = check_once(path, tuple(steps), data, as_json, color, html_file)
        if warm:
            warm_server.start()
        return code
    return _watch(path, tuple(steps), data, as_json, color, html_file)


def check_once(path: Path, steps: tuple[str, ...], data: dict, as_json: bool, color: bool,
               html_file: Path | bool | None, zygote=None) -> int:
    """One check of ``path``: what it holds through the intake, run, shown; the exit status."""
    modules = data["modules"]
    checked, steps = _prepare(path, steps, data)
    try:
        steps = known_steps(steps, data)
        if not any((checked.folder / f"{m}.py").exists() for m in modules):
            raise UsageError(f"{path}: none of {', '.join(m + '.py' for m in modules)} is here")
        notes: list[str] = []
        results = run(checked.folder, data, list(steps) or None, zygote, checked.module_errors if checked.staged else None,
                      checked.notebooks, notes)
        if checked.staged:
            results = name_cells(results, checked.folder)
        return show(results, path, checked.folder, as_json, color, html_file, limits=data.get("limits"), notes=notes)
    finally:
        checked.close()


def _watch(path: Path, steps: tuple[str, ...], data: dict, as_json: bool, color: bool,
           html_file: Path | bool | None) -> int:
    """``--watch``: the first check as usual (a mistake exits 2), then one per save, from one warm zygote."""
    from autograder.check import watch  # noqa: PLC0415 - imported when needed: a plain grade check loads only what it runs
    from autograder.sandbox.local_zygote import LocalZygote  # noqa: PLC0415 - imports torch

    zygote = LocalZygote()
    first = [True]

    def again() -> None:
        try:
            check_once(path, steps, data, as_json, color, html_file, zygote)
        except UsageError as exc:
            if first[0]:
                raise
            console.warn(str(exc), label="error: ")
        finally:
            first[0] = False

    def clear(_names) -> None:
        if sys.stdout.isatty():
            sys.stdout.write("\033[2J\033[H")
            sys.stdout.flush()

    try:
        watch.loop(path, again, on_change=clear, said=console.note)
    except KeyboardInterrupt:  # Ctrl-C during a check: the way to stop watching, like Ctrl-C while waiting
        pass
    finally:
        zygote.close()
    return 0


def show(results, path: Path, folder: Path, as_json: bool, color: bool, html_file: Path | bool | None,
         limits: dict | None = None, notes: list[str] | tuple = ()) -> int:
    """Print the table and what to fix (or the JSON); with ``html_file``, write the page; the exit status.
    ``limits`` (autograde's, as recorded): one line at the end names those this machine cannot apply; ``notes``: what
    else the student reads (a notebook's cell that raised while it ran)."""
    from autograder.check import printout  # noqa: PLC0415 - imported on first use: torch is slow to load

    if as_json:
        console.say(json.dumps({**printout.as_json(results), **({"notes": list(notes)} if notes else {})}, indent=2))
    else:
        console.say(printout.table(results, color=color))
        text = printout.details(results, color=color, notes=notes)
        if text:
            console.say(text)
    if html_file:
        from autograder.check.page import write_page  # noqa: PLC0415 - imported when needed: a plain grade check loads only what it runs

        where = path.parent if path.is_file() else path
        dest = page_path(where, html_file)
        written = write_page(results, path, dest)
        if written.parent == where.resolve() or where.resolve() in written.parents:
            console.warn(f"{written} is inside {where}/: do not hand it in with your exercises")
        (console.note if as_json else console.say)(f"feedback page: {written}")
    from autograder.worker.limits import not_applied_sentence  # noqa: PLC0415 - imported when needed: a plain grade check loads only what it runs

    unapplied = not_applied_sentence(limits or {})
    if unapplied:  # once, at the end: a limit this machine lacks, which autograde applies
        (console.note if as_json else console.say)(("\n" if not as_json else "") + unapplied)
    return 0 if results and all(r.status == "passed" for r in results) else 1


def run(path: Path, data: dict, steps: list[str] | None, zygote=None, module_errors: dict | None = None,
        notebooks: dict | None = None, said: list[str] | None = None):
    """The check results of the exercises in folder ``path``, from ``zygote`` or one started for this run."""
    from autograder.check.run import run_check  # noqa: PLC0415 - imported on first use: torch is slow to load
    from autograder.sandbox.local_zygote import LocalZygote  # noqa: PLC0415 - imports torch

    own = zygote is None
    zygote = LocalZygote() if own else zygote
    try:
        return run_check(path.resolve(), data, zygote, steps, module_errors, notebooks, said)
    finally:
        if own:
            zygote.close()


def _prepare(path: Path, steps: tuple[str, ...], data: dict):
    """(what to check, the steps): a folder as it is; a module file in its folder; a notebook, a zip or a folder
    of notebooks through the intake of ``grade autograde`` (``autograder/check/intake.py``)."""
    from autograder.check import intake  # noqa: PLC0415 - imported when needed: a plain grade check loads only what it runs

    modules = data["modules"]
    if path.is_file() and path.suffix == ".py":  # one module: check it, in its folder
        console.note(f"checking {path.stem} in {path.parent}/ (grade check takes a folder; this is the file's)")
        return intake.Checked(path.parent), steps or (path.stem,)
    if intake.needs_staging(path, modules):
        try:
            checked = intake.prepare(path, modules, list(data["steps"]))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        read = sorted({n.rsplit(" of ", 1)[-1] for n in checked.notes if " was read from the code cells of " in n})
        console.note(f"checking {path} as grade autograde takes it" + (f" (the code cells of {', '.join(read)})"
                                                                        if read else ""))
        for note in checked.notes:
            if " was read from the code cells of " not in note:
                console.note(note)
        for problem in checked.problems:
            console.warn(problem)
        return checked, steps or ((checked.module,) if checked.module else ())
    if path.is_file():
        raise UsageError(f"{path}: grade check takes a folder of exercise files (such as exercises/), a notebook "
                         "(.ipynb) or a .zip, as grade autograde does")
    if not path.is_dir():
        raise UsageError(f"{path}: no such folder (run grade check from the folder that holds exercises/, or name it)")
    return intake.Checked(path), steps


def _default_folder(modules: list[str]) -> Path:
    """./exercises; or, run inside the exercises folder (no exercises/ here, but the modules are), this folder."""
    if not DEFAULT_FOLDER.exists() and any(Path(f"{m}.py").is_file() for m in modules):
        console.note(f"checking this folder, {Path.cwd()} (it holds the exercise files)")
        return Path(".")
    return DEFAULT_FOLDER


def page_path(folder: Path, html_file: Path | bool) -> Path:
    """Where --html writes: FILE as given; else feedback.html in the current folder, unless that is the checked
    folder or inside it (grade check run in exercises/): then beside the checked folder, in its parent. The page
    is then never among the exercise files a student hands in."""
    if html_file is not True:
        return Path(html_file)
    here, checked = Path.cwd().resolve(), folder.resolve()
    return (checked.parent if here == checked or checked in here.parents else here) / PAGE
