"""``%load_ext autograder``, then ``%grade check [STEP ...] [--html [FILE]]`` in any cell.

It checks what the student would hand in: the code of the cells run so far, in the order they ran, written
as a notebook and read by ``grade check``'s intake (one notebook for all modules, split by its structure).
The check runs in a process of its own (``autograder/check/service.py``, started on first use and kept warm
for the kernel's life), in the same sandboxed worker as ``grade check``: never in the kernel, so the
student's globals, monkeypatches or a broken kernel state cannot change the verdict. The answer is shown as
rich output (HTML, inline pictures, no script) with plain text for consoles. No server extension, no build
step, no network: it works wherever an IPython kernel runs (JupyterLab, Notebook, VS Code, ``ipython``).
"""
from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

USAGE = "usage: %grade check [STEP ...] [--html [FILE]]"


class Answer:
    """One check's answer, displayed as HTML where the front end can, as text elsewhere."""

    def __init__(self, answer: dict):
        self.answer = answer

    def _repr_html_(self) -> str:
        return self.answer["html"]

    def __repr__(self) -> str:
        return self.answer["text"]


# The service runs in a process group of its own. The front end's interrupt (the stop button) signals the
# kernel's whole group, and ipykernel's shutdown signals every child in that group and waits until none is
# left: in the kernel's group the warm service died at each interrupt, and a dead one the kernel had not yet
# reaped kept the shutdown waiting until the kernel was killed, its exit hooks (and the folder's removal) unrun.
OWN_GROUP = ({"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if os.name == "nt"
             else {"start_new_session": True})


class Service:
    """The warm checking process of this kernel, and its temporary folder: removed by the kernel's exit hook,
    or by the service itself once its input ends (the kernel has gone, however it went).

    Each request carries a number, and its answer the same: an answer to a check the stop button interrupted is
    never read as a later check's. The stop button during a check passes the interrupt on (not on Windows, where
    the check runs to its limits): the service stops that check, its workers with it, and stays warm."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="grade-magic-"))
        self.asked = 0
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        self.log = open(self.folder / "service.log", "wb")  # noqa: SIM115 - kept open for the process's life
        self.process = subprocess.Popen([sys.executable, "-m", "autograder.check.service", "--remove", str(self.folder)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                        cwd=self.folder, env=env, text=True, encoding="utf-8", **OWN_GROUP)
        self.replies = self.process.stdout
        try:
            if not self.replies.readline():
                raise RuntimeError("the checking process did not start: " + self._log_tail())
        except BaseException:  # that, or the stop button while torch loads: no process of ours is left behind
            self.process.kill()
            self.close()
            raise

    def _log_tail(self) -> str:
        self.log.flush()
        try:
            return (self.folder / "service.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(its log is gone)"

    def ask(self, request: dict) -> dict:
        self.asked += 1
        try:
            try:
                self.process.stdin.write(json.dumps({**request, "id": self.asked}) + "\n")
                self.process.stdin.flush()
            except OSError:  # it has ended
                raise RuntimeError("the checking process stopped: " + self._log_tail()) from None
            while True:
                line = self.replies.readline()
                if not line:
                    raise RuntimeError("the checking process stopped: " + self._log_tail())
                answer = json.loads(line)
                if answer.pop("id", None) == self.asked:
                    return answer
                # else the answer to a check the stop button interrupted: not this one's
        except KeyboardInterrupt:
            self.interrupt()
            raise

    def interrupt(self) -> None:
        """The stop button, passed on: the check under way ends (POSIX; on Windows it runs to its limits)."""
        if os.name != "nt" and self.process.poll() is None:
            try:
                self.process.send_signal(signal.SIGINT)
            except OSError:  # it ended just now
                pass

    def close(self) -> None:
        try:
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
        finally:
            self.log.close()
            shutil.rmtree(self.folder, ignore_errors=True)


_service: Service | None = None


def service() -> Service:
    global _service  # noqa: PLW0603 - one warm process per kernel
    if _service is None or _service.process.poll() is not None:
        _service = Service()
        atexit.register(_service.close)
    return _service


def cells_run(shell) -> list[str]:
    """The code of the cells run so far in this kernel, in the order they ran (the running one included:
    its ``%grade`` line is an IPython line, which the intake leaves out)."""
    return list(shell.history_manager.input_hist_raw[1:])  # cell N of the notebook is In [N]


def write_notebook(sources: list[str], path: Path) -> Path:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": source} for source in sources]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                    encoding="utf-8")
    return path


def notebook_name(shell) -> str | None:
    """The file name of the kernel's notebook where the front end tells it (JupyterLab and Notebook 7 set
    ``JPY_SESSION_NAME``, VS Code ``__vsc_ipynb_file__``): a module's own notebook checks that module."""
    found = shell.user_ns.get("__vsc_ipynb_file__") or os.environ.get("JPY_SESSION_NAME")
    return Path(str(found)).name if found else None


def parse(line: str) -> tuple[list[str], str | None]:
    """(the steps, the page's file or None) of ``check [STEP ...] [--html [FILE]]``."""
    words = shlex.split(line)
    if not words or words[0] != "check":
        raise ValueError(USAGE)
    steps, html = [], None
    rest = words[1:]
    while rest:
        word = rest.pop(0)
        if word == "--html":
            html = rest.pop(0) if rest and rest[0].endswith((".html", ".htm")) else "feedback.html"
        elif word.startswith("-"):
            raise ValueError(f"{word}: unknown option; {USAGE}")
        else:
            steps.append(word)
    return steps, html


def grade(line: str, shell=None):
    """The ``%grade`` line magic."""
    from IPython.display import display  # noqa: PLC0415 - only inside an IPython kernel

    shell = shell or _shell()
    try:
        steps, html = parse(line)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return None
    sources = cells_run(shell)
    checker = service()
    notebook = write_notebook(sources, checker.folder / "cells-you-ran.ipynb")
    said = (f"checked the {sum(bool(s.strip()) for s in sources)} cells you ran, in the order you ran them, as you would hand them in "
            "(in a worker of its own, not in this kernel)")
    answer = checker.ask({"path": str(notebook), "steps": steps, "said": said, "cells_as_run": True,
                          "notebook": notebook_name(shell),
                          "html": str(Path(html).resolve()) if html else None})
    if "error" in answer:
        print(f"error: {answer['error']}", file=sys.stderr)
        return None
    for problem in answer.get("problems", []):
        print(f"warning: {problem}", file=sys.stderr)
    display(Answer(answer))
    if answer.get("page"):
        print(f"feedback page: {answer['page']}")
    return None


def _shell():
    from IPython import get_ipython  # noqa: PLC0415 - only inside an IPython kernel

    return get_ipython()


def load(shell) -> None:
    shell.register_magic_function(lambda line: grade(line, shell), magic_kind="line", magic_name="grade")
