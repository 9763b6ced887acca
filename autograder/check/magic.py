"""``%load_ext autograder``, then ``%grade check [STEP ...] [--html [FILE]]`` in any cell.

It checks what the student would hand in: the code of the cells run so far, in the order they ran, read by ``grade
check``'s intake as a notebook (one notebook for all modules, split by its structure). The check runs in the
student's warm ``grade check`` server (``check/warm_server.py``: one process per user, shared with the terminal's
``grade check``, started on first use, ending when idle), in the same sandboxed worker as ``grade check``: never in
the kernel, so the student's globals, monkeypatches or a broken kernel state cannot change the verdict. The kernel
keeps no process and no folder of the kit's. The stop button closes the connection, which ends the check and its
workers; the server stays warm. Where there is no such server (Windows, ``GRADE_CHECK_SERVER=0``, no folder of the
user's own), each check is a process of its own (``python -m autograder.check.magic``), loading torch each time.

The answer is shown as rich output (HTML, inline pictures, no script) with plain text for consoles. No server
extension, no build step, no network: it works wherever an IPython kernel runs (JupyterLab, Notebook, VS Code,
``ipython``). tests/system/test_magic.py runs it in real kernels.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from autograder.check import warm_server

USAGE = "usage: %grade check [STEP ...] [--html [FILE]]"


class Answer:
    """One check's answer, displayed as HTML where the front end can, as text elsewhere."""

    def __init__(self, answer: dict):
        self.answer = answer

    def _repr_html_(self) -> str:
        return self.answer["html"]

    def __repr__(self) -> str:
        return self.answer["text"]


def cells_run(shell) -> list[str]:
    """The code of the cells run so far in this kernel, in the order they ran (the running one included:
    its ``%grade`` line is an IPython line, which the intake leaves out)."""
    return list(shell.history_manager.input_hist_raw[1:])  # cell N of the notebook is In [N]


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


def checked(request: dict) -> dict:
    """The answer to ``request``: from the warm server (started if none answers), else from a process of its own."""
    if warm_server.enabled():
        if warm_server.socket_path() is None:  # said at every check, as the terminal's grade check says it
            print(f"note: no warm grade check server: {warm_server.refusal()}; each check loads torch itself",
                  file=sys.stderr)
        else:
            answer = warm_server.ask(request)
            if answer is None:
                failed = warm_server.ensure_started()
                if failed is not None:
                    return {"error": f"the checking process did not start: {failed}"}
                answer = warm_server.ask(request)
            if answer is not None:
                return answer
    return _checked_alone(request)


def _checked_alone(request: dict) -> dict:
    """One check in a process of its own (no warm server here): the request on its input, the answer on its output."""
    done = subprocess.run([sys.executable, "-m", "autograder.check.magic"], input=json.dumps(request),
                          capture_output=True, text=True, encoding="utf-8")
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": "the checking process did not start: " + done.stderr[-2000:].strip()}


def grade(line: str, shell=None):
    """The ``%grade`` line magic."""
    from IPython.display import display

    shell = shell or _shell()
    try:
        steps, html = parse(line)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return None
    sources = cells_run(shell)
    said = (f"checked the {sum(bool(s.strip()) for s in sources)} cells you ran, in the order you ran them, as you "
            "would hand them in (in a worker of its own, not in this kernel)")
    answer = checked({"cells": sources, "steps": steps, "said": said, "notebook": notebook_name(shell),
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
    from IPython import get_ipython

    return get_ipython()


def load(shell) -> None:
    shell.register_magic_function(lambda line: grade(line, shell), magic_kind="line", magic_name="grade")


def main() -> int:
    """``python -m autograder.check.magic``: one notebook check, its request on standard input, its answer the last
    line of standard output (what else is printed, a worker's or a library's, goes to standard error)."""
    request = json.loads(sys.stdin.read())
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from autograder.check import checking

    reply.write(json.dumps(checking.answer_cells(request)) + "\n")
    reply.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
