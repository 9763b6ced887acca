"""``grade check``, one pipeline: what the command line, the warm server and the ``%grade`` magic all run.

A check takes a folder (or a module file, a notebook, a .zip: ``grade autograde``'s intake), runs the public cases of
the course documents in ``grade check``'s own sandboxed workers (``sandbox/local_zygote.py``) and says what it found:
printed for a terminal (``terminal_check``: the table, what to fix, the page with ``--html``, the exit status), or as
the answer a notebook shows (``notebook_check``: text and HTML). Nothing here knows who asked: the command line
calls it in-process (``commands/check.py``), the warm server in a fork of itself (``check/warm_server.py``), for a
terminal or for a kernel's ``%grade check`` (``check/magic.py``).
"""
from __future__ import annotations

import ast
import functools
import json
import re
import time
from dataclasses import replace
from pathlib import Path

from autograder import console
from autograder.check.cells import name_cells
from autograder.check.steps import known_steps
from autograder.usage import UsageError

DEFAULT_FOLDER = Path("exercises")
PAGE = "feedback.html"


@functools.cache  # once a process: the warm server's checks, forks of it, find them loaded
def load() -> dict:
    """The public cases, loaded for the process's life with the collector paused (``long_lived.py``)."""
    from autograder import long_lived

    try:
        with long_lived.loading():
            from autograder.check import public_cases

            return public_cases.load()
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None


def terminal_check(path: Path | None, steps: tuple[str, ...], data: dict, as_json: bool, color: bool,
                   html_file: Path | bool | None, zygote=None) -> int:
    """``grade check`` of ``path`` (None: ./exercises, or this folder when it holds the exercise files), printed for a
    terminal; the exit status: 0 when every check passes."""
    path = default_folder(data["modules"]) if path is None else Path(path)
    return _check_once(path, tuple(steps), data, as_json, color, html_file, zygote)


def _check_once(path: Path, steps: tuple[str, ...], data: dict, as_json: bool, color: bool,
               html_file: Path | bool | None, zygote=None) -> int:
    """One check of ``path``: what it holds through the intake, run, shown; the exit status."""
    modules = data["modules"]
    checked, steps = _prepare(path, steps, data)
    try:
        steps = known_steps(steps, data)
        if not any((checked.folder / f"{m}.py").exists() for m in modules):
            raise UsageError(f"{path}: none of {', '.join(m + '.py' for m in modules)} is here")
        notes: list[str] = []
        errors = checked.module_errors if checked.staged else None
        results = run(checked.folder, data, list(steps) or None, zygote, errors, checked.notebooks, notes)
        if checked.staged:
            results = name_cells(results, checked.folder)
        return show(results, path, checked.folder, as_json, color, html_file, limits=data.get("limits"), notes=notes)
    finally:
        checked.close()


def show(results, path: Path, folder: Path, as_json: bool, color: bool, html_file: Path | bool | None,
         limits: dict | None = None, notes: list[str] | tuple = ()) -> int:
    """Print the table and what to fix (or the JSON); with ``html_file``, write the page; the exit status.
    ``limits`` (autograde's, as recorded): one line at the end names those this machine cannot apply; ``notes``: what
    else the student reads (a notebook's cell that raised while it ran)."""
    from autograder.check import printout

    if as_json:
        console.say(json.dumps({**printout.as_json(results), **({"notes": list(notes)} if notes else {})}, indent=2))
    else:
        console.say(printout.table(results, color=color))
        text = printout.details(results, color=color, notes=notes)
        if text:
            console.say(text)
    if html_file:
        from autograder.check.page import write_page

        where = path.parent if path.is_file() else path
        dest = page_path(where, html_file)
        written = write_page(results, path, dest)
        if written.parent == where.resolve() or where.resolve() in written.parents:
            console.warn(f"{written} is inside {where}/: do not hand it in with your exercises")
        (console.note if as_json else console.say)(f"feedback page: {written}")
    from autograder.worker.limits import not_applied_sentence

    unapplied = not_applied_sentence(limits or {})
    if unapplied:  # once, at the end: a limit this machine lacks, which autograde applies
        (console.note if as_json else console.say)(("\n" if not as_json else "") + unapplied)
    return 0 if results and all(r.status == "passed" for r in results) else 1


def run(path: Path, data: dict, steps: list[str] | None, zygote=None, module_errors: dict | None = None,
        notebooks: dict | None = None, said: list[str] | None = None):
    """The check results of the exercises in folder ``path``, from ``zygote`` or one started for this run."""
    from autograder.check.run import run_check
    from autograder.sandbox.local_zygote import LocalZygote

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
    from autograder.check import intake

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


def default_folder(modules: list[str]) -> Path:
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


def answer_cells(request: dict, zygote=None) -> dict:
    """A notebook's ``%grade check`` (``check/magic.py``): the cells the kernel ran (``request["cells"]``, cell N being
    In [N]) written as a notebook in a folder of this check's own (removed after) and checked; the answer the magic
    shows, or ``{"error"}`` in the student's words (a usage error, the intake's)."""
    import shutil
    import tempfile

    tempfile.tempdir = None  # the caller's TMPDIR, not the one this process first saw
    folder = Path(tempfile.mkdtemp(prefix="grade-magic-"))
    try:
        path = folder / "cells-you-ran.ipynb"
        cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": str(source)}
                 for source in request["cells"]]
        path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                        encoding="utf-8")
        return notebook_check(load(), zygote, path, list(request.get("steps") or ()), str(request["said"]),
                              request.get("html"), as_run=True, notebook=request.get("notebook"))
    except Exception as exc:  # noqa: BLE001 - said in the notebook, as grade check says it in a terminal
        return {"error": str(exc) or type(exc).__name__}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def notebook_check(data: dict, zygote, path: Path, steps: list[str], said: str, html_file: str | None,
                   as_run: bool = False, notebook: str | None = None) -> dict:
    """The ``%grade check`` of a notebook: its answer as the magic shows it (``{"text", "html", "passed", "page",
    "problems", "seconds"}``). ``as_run``: the notebook is the cells a kernel ran, cell N being In [N], and its cells
    are named so. ``notebook``: the kernel's notebook file, when known: named after a module, that module is checked.
    ``zygote``: None starts one for this check."""
    from autograder.check import intake, rendered

    started = time.perf_counter()
    checked = intake.prepare(path, data["modules"], list(data["steps"]))
    try:
        own = Path(notebook).stem if notebook and Path(notebook).stem in data["modules"] else checked.module
        wanted = list(known_steps(tuple(steps), data)) or \
            ([own] if own else attempted_modules(checked.folder, data))
        notes: list[str] = []
        results = run(checked.folder, data, wanted or None, zygote,
                      checked.module_errors if checked.staged else None, checked.notebooks, notes)
        results = name_cells(results, checked.folder)
        if as_run:
            results, notes = said_as_run(results, notes, path.name)
        page = None
        if html_file:
            from autograder.check.page import write_page

            page = str(write_page(results, Path(said), Path(html_file)))
        return {"text": rendered.text(results, said, notes), "html": rendered.html(results, said, notes),
                "passed": bool(results) and all(r.status == "passed" for r in results), "page": page,
                "problems": checked.problems, "seconds": time.perf_counter() - started}
    finally:
        checked.close()


def _defined_steps(folder: Path, data: dict, module: str) -> set[str] | None:
    """The steps of ``module`` its staged source defines (parsed, never run); None when it does not parse."""
    try:
        tree = ast.parse((folder / f"{module}.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return {s for s in data["steps"] if s.split(".", 1)[0] == module and s.split(".", 1)[1] in names}


def attempted_modules(folder: Path, data: dict) -> list[str]:
    """The modules the cells define steps of, as ``grade check`` of the saved notebook checks them: a module's own
    notebook (the wrapper's carries ``CausalAttention`` over, the step it builds on) checks that module only; else
    each module whose staged source defines one of its own steps (one that does not parse is shown, with its cell)."""
    defined = {m: _defined_steps(folder, data, m) for m in data["modules"]}
    found = [m for m in data["modules"] if defined[m] is None or defined[m]]
    for module in found:
        builds_on, todo = set(), [s for s in data["steps"] if s.startswith(module + ".")]
        while todo:
            for other in data["steps"].get(todo.pop(), {}).get("uses", []):
                if other not in builds_on:
                    builds_on.add(other)
                    todo.append(other)
        if len(found) > 1 and all(o == module or (defined[o] and defined[o] <= builds_on) for o in found):
            return [module]
    return found


def said_as_run(results: list, notes: list[str], name: str) -> tuple[list, list[str]]:
    """``results`` and ``notes`` with each cell of ``name`` (the cells a kernel ran, cell N being In [N]) said as the
    cell the student ran: ``the cell you ran as In [12]``."""
    pattern = re.compile(rf"{re.escape(name)}, code cell (\d+)")

    def said(text):
        return pattern.sub(r"the cell you ran as In [\1]", text) if isinstance(text, str) else text

    results = [replace(r, cell=said(r.cell), counts=tuple(replace(c, feedback=said(c.feedback),
                                                                   lines=tuple(said(line) for line in c.lines))
                                                           for c in r.counts)) for r in results]
    return results, [said(note) for note in notes]


