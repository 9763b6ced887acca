"""A warm ``grade check`` for a notebook's kernel: a process of its own, never the kernel.

``python -m autograder.check.service`` imports torch and the checking code once, then reads one request per
line on its standard input, ``{"path", "steps", "said", "html", ...}``, and answers each with one JSON line on
its standard output: ``{"text", "html", "passed", "page", "seconds"}`` or ``{"error"}``, with the request's
``id``. Started with ``--remove FOLDER`` (the kernel's temporary folder), it removes that folder once its input
ends: the kernel that started it has gone, whether it shut down or was killed. Everything else that
would go to standard output (a worker's, a library's) goes to standard error instead: the answers' channel is a
copy of the original descriptor kept for them (no ``pass_fds``: this works on Windows too). Each check goes
through ``grade check``'s own intake and worker (``check/intake.py``, ``LocalZygote``): a worker forked from
this clean process per step, so nothing of the kernel (its globals, a monkeypatch, a broken state) is there.
"""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path


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


class Checker:
    """The public cases and one warm zygote, kept for every request."""

    def __init__(self) -> None:
        from autograder import long_lived  # noqa: PLC0415 - imported on first use: the kernel's service starts lean

        with long_lived.loading():
            from autograder.check import public_cases  # noqa: PLC0415 - imported on first use: torch is slow to load
            from autograder.sandbox.local_zygote import LocalZygote  # noqa: PLC0415 - imports torch

            self.data = public_cases.load()
            self.zygote = LocalZygote()

    def check(self, path: Path, steps: list[str], said: str, html_file: str | None, as_run: bool = False,
              notebook: str | None = None) -> dict:
        """``as_run``: the notebook is the cells a kernel ran, cell N being In [N], and its cells are named so.
        ``notebook``: the kernel's notebook file, when known: named after a module, that module is checked."""
        from autograder.check import intake, rendered  # noqa: PLC0415 - imported on first use: torch is slow to load
        from autograder.check.run import run_check  # noqa: PLC0415 - imported on first use: torch is slow to load
        from autograder.check.cells import name_cells  # noqa: PLC0415 - imported when needed: the kernel's service starts lean
        from autograder.check.steps import known_steps  # noqa: PLC0415 - imported when needed: the kernel's service starts lean

        started = time.perf_counter()
        checked = intake.prepare(path, self.data["modules"], list(self.data["steps"]))
        try:
            own = Path(notebook).stem if notebook and Path(notebook).stem in self.data["modules"] else checked.module
            wanted = list(known_steps(tuple(steps), self.data)) or \
                ([own] if own else attempted_modules(checked.folder, self.data))
            notes: list[str] = []
            results = run_check(checked.folder.resolve(), self.data, self.zygote, wanted or None,
                                checked.module_errors if checked.staged else None, checked.notebooks, notes)
            results = name_cells(results, checked.folder)
            if as_run:
                results, notes = said_as_run(results, notes, path.name)
            page = None
            if html_file:
                from autograder.check.page import write_page  # noqa: PLC0415 - imported when needed: the kernel's service starts lean

                page = str(write_page(results, Path(said), Path(html_file)))
            return {"text": rendered.text(results, said, notes), "html": rendered.html(results, said, notes),
                    "passed": bool(results) and all(r.status == "passed" for r in results), "page": page,
                    "problems": checked.problems, "seconds": time.perf_counter() - started}
        finally:
            checked.close()

    def close(self) -> None:
        self.zygote.close()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    remove = Path(argv[1]) if argv[:1] == ["--remove"] and len(argv) == 2 else None
    serve()
    # Its input has ended: the kernel has gone. (A service that fails leaves its folder: the kernel reads the log.)
    if remove is not None:
        sys.stderr.flush()
        for fd in (1, 2):  # its log, open there (Windows removes no open file)
            os.close(fd)
        shutil.rmtree(remove, ignore_errors=True)
    return 0


def serve() -> None:
    """Answer each request until the input ends or the kernel stops reading. Each answer carries its request's
    ``id``. An interrupt (the kernel's stop button, passed on) stops the check under way, which closes its workers
    as ``grade check`` does on Ctrl-C, and is answered ``{"error": "stopped"}``; an idle one is ignored."""
    sys.stdout.flush()
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the answers' channel; not inherited by spawned workers
    os.dup2(2, 1)  # whatever else writes on standard output (a forked worker too) goes to standard error
    sys.stdout = sys.stderr
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")  # likewise: a worker reading its input reads nothing
    with open(os.devnull, "rb") as nothing:
        os.dup2(nothing.fileno(), 0)
    checker = Checker()
    checking = [False]

    def interrupted(signum, frame) -> None:  # between checks (reading, answering) an interrupt has nothing to stop
        if checking[0]:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupted)
    reply.write(json.dumps({"ready": True}) + "\n")
    reply.flush()
    try:
        for line in requests:
            request = json.loads(line)
            checking[0] = True
            try:
                answer = _answer(checker, request)
            except KeyboardInterrupt:
                answer = {"error": "stopped"}
            finally:
                checking[0] = False
            try:
                reply.write(json.dumps({**answer, "id": request.get("id")}) + "\n")
                reply.flush()
            except OSError:  # the kernel has gone
                return
    finally:
        checker.close()


def _answer(checker: Checker, request: dict) -> dict:
    try:
        return checker.check(Path(request["path"]), request.get("steps", []), request["said"], request.get("html"),
                             request.get("cells_as_run", False), request.get("notebook"))
    except Exception as exc:  # noqa: BLE001 - a usage error or the intake's words, said in the notebook
        return {"error": str(exc) or type(exc).__name__}


if __name__ == "__main__":
    sys.exit(main())
