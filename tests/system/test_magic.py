"""``%grade check`` as a student uses it: a notebook run top to bottom by nbclient in a real kernel.

The notebooks are the runnable fixtures of ``tests/support/submission_forms.py`` with ``%load_ext autograder`` in
their first cell and the magic in their last. The test reads the magic's outputs as the notebook shows
them, and compares its verdict with ``grade check`` on the saved notebook.
"""
from __future__ import annotations

import contextlib
import json
import queue
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from autograder.check import warm_server

from .conftest import ROOT, run_grade
from tests.support.submission_forms import one_notebook

pytestmark = pytest.mark.slow

SAMPLES = ROOT / "samples" / "submissions"
#: what the kernel imports of the kit: the magic and the warm server's client (no torch, no checking code)
KERNEL_SIDE = ["autograder", "autograder.check", "autograder.check.magic", "autograder.check.warm_server",
               "autograder.worker", "autograder.worker.owned_dirs", "autograder.worker.protocol",
               "autograder.worker.syscalls", "autograder.worker.waits"]


@pytest.fixture
def warm(monkeypatch):
    """The warm server on, in a short folder of this test's own (a socket's name must be short), for this process and
    the kernels it starts; when done, its socket removed (the server then ends within seconds)."""
    folder = Path(tempfile.mkdtemp(prefix="gcs-", dir="/tmp"))
    monkeypatch.setenv(warm_server.ENV, "1")
    monkeypatch.setenv(warm_server.DIR_ENV, str(folder))
    monkeypatch.setenv(warm_server.IDLE_ENV, "300")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
    _waited(lambda: not _servers(folder), seconds=60, every=0.2)


def with_extension(path):
    """The notebook at ``path`` with ``%load_ext autograder`` as its first cell, for a Python 3 kernel."""
    import nbformat  # noqa: PLC0415 - imported on first use: nbformat is slow to load

    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell("%load_ext autograder"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def run_notebook(path, *last_cells: str, allow_errors: bool = False):
    """Run ``path`` in a fresh kernel with the extension loaded first and ``last_cells`` at the end; the notebook."""
    import nbformat  # noqa: PLC0415 - imported on first use: nbformat is slow to load
    from tests.support.kernels import notebook_client  # noqa: PLC0415 - optional: Jupyter's, from the test extra

    nb = with_extension(path)
    nb.cells += [nbformat.v4.new_code_cell(c) for c in last_cells]
    notebook_client(nb, timeout=600, kernel_name="python3", allow_errors=allow_errors, **LOADED,
                    resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


#: a cell's outputs waited for as long as its reply: nbclient's default waits 4 s after the reply for the outputs, then
#: goes on without them (a cell that showed nothing, on a loaded machine: a full run's `%grade check` read '')
LOADED = {"iopub_timeout": 120, "raise_on_iopub_timeout": True}


def shown(cell) -> tuple[str, str]:
    """(the plain text, the HTML) a cell's outputs show."""
    text, html = [], []
    for out in cell.outputs:
        text.append(out.get("text", "") + out.get("data", {}).get("text/plain", ""))
        html.append(out.get("data", {}).get("text/html", ""))
    return "\n".join(text), "\n".join(html)


def test_a_correct_notebook_passes_and_says_hidden_cases_come_later(tmp_path, warm):
    # a cell that prints when the module is imported: the worker's output never mixes with the magic's answers
    nb = run_notebook(one_notebook(SAMPLES / "alice", tmp_path, name="alice.ipynb"),
                      "print('hello from a cell')\ninput = None", "%grade check",
                      "import sys\nprint(sorted(m for m in sys.modules if m.startswith('autograder')))")
    text, html = shown(nb.cells[-2])
    assert "public checks passed; hidden cases are graded later (54/54)" in text
    assert re.search(r"checked the \d+ cells you ran, in the order you ran them", text)
    assert "FAILED" not in text and "all passed" not in text.lower()
    assert "<pre>" in html and "public checks passed; hidden cases are graded later" in html
    # the check ran outside the kernel: none of the checking code was imported here, only the magic and its client
    assert shown(nb.cells[-1])[0].strip() == str(KERNEL_SIDE)


def test_a_buggy_notebook_reads_as_grade_check_does(tmp_path, warm):
    path = one_notebook(SAMPLES / "carol", tmp_path, name="carol.ipynb")
    nb = run_notebook(path, "%grade check causal_attention --html")
    text, html = shown(nb.cells[-1])
    assert f"feedback page: {tmp_path / 'feedback.html'}" in text  # the page grade check --html writes
    assert "likely: masked after the softmax" in (tmp_path / "feedback.html").read_text()
    assert "likely: masked after the softmax without renormalizing the rows" in text
    assert "public checks passed" not in text  # control: the same words fail here
    code = [c for c in nb.cells if c.cell_type == "code"]
    cell = next(i for i, c in enumerate(code, 1) if c.source.startswith("class CausalAttention("))
    assert f"defined in the cell you ran as In [{cell}]: class CausalAttention(nn.Module):" in text
    assert 'src="data:image/png;base64,' in html and "<script" not in html  # the heatmaps, inline, no script
    # the same table and verdict as grade check on the saved notebook
    cli = run_grade("check", str(path), "--step", "causal_attention", timeout=300)
    table = cli.stdout.split("\n\n", 1)[0]
    assert table in text
    assert json.dumps("likely: masked after the softmax without renormalizing the rows")[1:-1] in cli.stdout


def test_a_syntax_error_is_named_with_its_cell_and_the_rest_still_checks(tmp_path):
    """As the kernel ran it: the cell with the syntax error failed there, and the cells after it ran. With no warm
    server (``GRADE_CHECK_SERVER=0``, as the suite runs, and as on Windows): a process of its own per check."""
    path = one_notebook(SAMPLES / "alice", tmp_path, name="typo.ipynb")
    data = json.loads(path.read_text())
    code = [c for c in data["cells"] if c["cell_type"] == "code"]
    index = next(i for i, c in enumerate(code) if "".join(c["source"]).startswith("def softmax_naive("))
    code[index]["source"] = ["def softmax_naive(x:\n", "    return x\n"]
    path.write_text(json.dumps(data))
    nb = run_notebook(path, "%grade check", allow_errors=True)
    # the kernel said so too
    assert any(o.get("ename") == "SyntaxError" for c in nb.cells for o in c.get("outputs", []))
    text, _ = shown(nb.cells[-1])
    assert f"the cell you ran as In [{index + 2}], line 1 raised SyntaxError" in text  # +1: load_ext, +1: 1-based
    assert f"defined in the cell you ran as In [{index + 2}]: def softmax_naive(x:" in text
    assert "cells-you-ran" not in text and "simple_attention.py" not in text
    assert re.search(r"simple_attention\.attention_scores\s+passed", text)  # the cells around it ran
    assert re.search(r"trainable_attention\.SelfAttention_v2\s+passed", text)


@contextlib.contextmanager
def alice_in_a_kernel(tmp_path, monkeypatch):
    """alice's notebook run in a fresh kernel with the extension loaded, the kernel's temporary files in a folder of
    their own: (the client, ``run(source)`` -> what a new cell showed, that folder). The kernel shuts down after."""
    import nbformat  # noqa: PLC0415 - imported on first use: nbformat is slow to load
    from tests.support.kernels import notebook_client  # noqa: PLC0415 - optional: Jupyter's, from the test extra

    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    monkeypatch.setenv("TMPDIR", str(temp))  # the kernel's environment, and so its tempfile's
    path = one_notebook(SAMPLES / "alice", tmp_path, name="alice.ipynb")
    nb = with_extension(path)
    client = notebook_client(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                            **LOADED)

    def run(source: str) -> str:
        nb.cells.append(nbformat.v4.new_code_cell(source))
        return shown(client.execute_cell(nb.cells[-1], len(nb.cells) - 1))[0]

    with client.setup_kernel():
        for index, cell in enumerate(list(nb.cells)):
            client.execute_cell(cell, index)
        yield client, run, temp


def interrupted(client, asked: str) -> dict:
    """Press stop (jupyter_client's interrupt, as JupyterLab's button) once while ``asked`` (a message id) runs; its
    reply. The caller presses only once the cell's own code runs (a process it started is there).

    Not as soon as the kernel has begun the request (its ``execute_input`` is out): ipykernel's ``execute_request``
    runs its own code between that message and the cell's (``do_execute``), and a press that lands there ends the
    request with no reply at all, the kernel merely going idle ("KeyboardInterrupt caught in kernel",
    ``Kernel.dispatch_shell``); later presses find an idle kernel. A run under load waited 12 presses for that reply
    (the kernel had said only "idle" since; no ``sleep`` was running).

    ``asked`` is sent with ``stop_on_error=False``: an interrupted cell ends in an error, after which ipykernel aborts
    the requests that reach it before it stops aborting (``Kernel._abort_queues``), which under load can be the next
    cell, answered "aborted" with no output (two runs under load read '' from the next ``%grade check``).
    """
    from jupyter_core.utils import run_sync  # noqa: PLC0415 - optional: Jupyter's, from the test extra

    run_sync(client.km.interrupt_kernel)()
    try:
        reply = run_sync(client.kc.get_shell_msg)(timeout=REPLY_WAIT)
        while reply["parent_header"].get("msg_id") != asked:
            reply = run_sync(client.kc.get_shell_msg)(timeout=REPLY_WAIT)
    except queue.Empty:
        raise AssertionError(f"no reply to the interrupted cell {REPLY_WAIT} s after stop was pressed; "
                             f"{_kernel_state(client)}") from None
    return reply["content"]


#: how long ``interrupted`` waits for the interrupted cell's reply: far less than the cells' own length
REPLY_WAIT = 240


def _waited(condition, seconds: float, every: float):
    """``condition()`` asked every ``every`` seconds until it holds or ``seconds`` have passed; its last answer."""
    deadline = time.monotonic() + seconds
    found = condition()
    while not found and time.monotonic() < deadline:
        time.sleep(every)
        found = condition()
    return found


def _kernel_processes(client) -> list:
    """The kernel's process and every process under it ([] once it is gone)."""
    import psutil  # noqa: PLC0415 - ipykernel's own dependency

    try:
        kernel = psutil.Process(client.km.provisioner.pid)
        return [kernel, *kernel.children(recursive=True)]
    except psutil.Error:
        return []


def _running(client, name: str) -> bool:
    """Whether a process called ``name`` runs under the kernel (a cell's shell line, once its own code runs)."""
    import psutil  # noqa: PLC0415 - ipykernel's own dependency

    with contextlib.suppress(psutil.Error):
        return any(p.name() == name for p in _kernel_processes(client)[1:])
    return False


def _kernel_state(client) -> str:
    """What the kernel said and ran, for a test that waited in vain: its outputs since, and its processes."""
    import psutil  # noqa: PLC0415 - ipykernel's own dependency
    from jupyter_core.utils import run_sync  # noqa: PLC0415 - optional: Jupyter's, from the test extra

    said = []
    with contextlib.suppress(queue.Empty):
        while len(said) < 50:
            message = run_sync(client.kc.get_iopub_msg)(timeout=1)
            said.append((message["msg_type"], {k: str(v)[:200] for k, v in message["content"].items()}))
    try:
        processes = [(p.pid, p.status(), " ".join(p.cmdline())[:120]) for p in _kernel_processes(client)]
    except psutil.Error as error:
        processes = [repr(error)]
    return f"the kernel said since: {said}; its processes: {processes}"


def _servers(folder) -> list[int]:
    """The warm servers whose folder is ``folder`` (started by a notebook, or left by a terminal's grade check): not
    the checks, hosts and workers they fork (those have a parent among them); never the kernel."""
    import psutil  # noqa: PLC0415 - ipykernel's own dependency

    found = {}
    for p in psutil.process_iter(["cmdline", "ppid"]):
        with contextlib.suppress(psutil.Error):
            line = " ".join(p.info["cmdline"] or [])
            if ("autograder.check.warm_server" in line or "autograder.cli" in line) and \
                    p.environ().get(warm_server.DIR_ENV) == str(folder):
                found[p.pid] = p.info["ppid"]
    return sorted(pid for pid, parent in found.items() if parent not in found)


def _descendants(folder) -> list:
    import psutil  # noqa: PLC0415 - ipykernel's own dependency

    found = []
    for pid in _servers(folder):
        with contextlib.suppress(psutil.Error):
            found += psutil.Process(pid).children(recursive=True)
    return found


def _cpu(process) -> float:
    import psutil  # noqa: PLC0415 - ipykernel's own dependency

    try:
        return process.cpu_times().user
    except psutil.Error:
        return 0.0


def test_a_terminal_check_and_every_notebook_share_one_warm_process(tmp_path, monkeypatch, warm):
    """One student: a terminal's grade check leaves the warm server; the notebook's %grade check is answered by it,
    and so is a second kernel's: one process of the kit's, however many checks (a control: a terminal check with the
    server off starts none)."""
    folder = warm
    off = run_grade("check", str(SAMPLES / "alice"), env={warm_server.ENV: "0"})
    assert off.returncode == 0 and _servers(folder) == []
    first = run_grade("check", str(SAMPLES / "alice"), env={warm_server.ENV: "1", warm_server.DIR_ENV: str(folder)})
    assert first.returncode == 0, first.stderr
    servers = _waited(lambda: _servers(folder), seconds=60, every=0.1)
    assert len(servers) == 1
    for _kernel in range(2):
        with alice_in_a_kernel(tmp_path, monkeypatch) as (_client, run, temp):
            assert "public checks passed" in run("%grade check")
            assert _servers(folder) == servers
            assert list(temp.iterdir()) == []  # nothing of the kit's in the kernel's temporary folder


def test_the_stop_button_keeps_the_warm_check(tmp_path, monkeypatch, warm):
    # JupyterLab's stop button and nbclient's shutdown both go through jupyter_client: the interrupt signals the
    # kernel's process group, and the kernel, asked to shut down, first ends every child left in that group
    with alice_in_a_kernel(tmp_path, monkeypatch) as (client, run, _temp):
        assert "public checks passed" in run("%grade check")
        before = _servers(warm)
        assert len(before) == 1
        # a cell still running when stop is pressed (one that ends first leaves nothing to interrupt); a shell line,
        # which the checks read as a comment, not as the student's code
        asked = client.kc.execute("!sleep 900", stop_on_error=False)
        assert _waited(lambda: _running(client, "sleep"), seconds=300, every=0.05)
        assert interrupted(client, asked)["status"] in ("ok", "error")
        assert not _running(client, "sleep")  # the press reached the shell line: it ended the sleep
        assert "public checks passed" in run("%grade check")
        assert _servers(warm) == before  # the same warm process answered: the interrupt did not end it
    assert _servers(warm) == before  # the kernel's shutdown did not end it either: it ends when idle


def test_the_stop_button_during_a_check_stops_it_and_the_next_check_reads_its_own_answer(tmp_path, monkeypatch,
                                                                                        warm):
    # a student whose softmax loops forever checks, presses stop, then checks another module: the loop is stopped at
    # once (not at its time limit), the same warm process answers, and the answer is that module's, not the stopped
    # one's; the check's own folder (the cells it read) goes with it
    import psutil  # noqa: PLC0415 - ipykernel's own dependency

    with alice_in_a_kernel(tmp_path, monkeypatch) as (client, run, temp):
        run("def softmax_naive(x):\n    while True:\n        pass")
        asked = client.kc.execute("%grade check simple_attention", stop_on_error=False)
        # until the student's loop runs in a worker
        looping = _waited(lambda: [p for p in _descendants(warm) if _cpu(p) > 1], seconds=300, every=0.2)
        assert looping
        assert any(p.name.startswith("grade-magic-") for p in temp.iterdir())  # the check's folder, meanwhile
        servers = _servers(warm)
        assert interrupted(client, asked)["ename"] == "KeyboardInterrupt"
        psutil.wait_procs(looping, timeout=15)  # well inside the step's time limit (20 s), counted from before
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in looping)
        # the check's folders (the cells it read, its workers') went with it
        assert _waited(lambda: list(temp.iterdir()) == [], seconds=60, every=0.1), list(temp.iterdir())
        text = run("%grade check trainable_attention")
        assert re.search(r"trainable_attention\.SelfAttention_v2\s+passed", text)
        assert "simple_attention" not in text  # not the stopped check's answer
        assert _servers(warm) == servers  # the same warm process


def test_the_stop_button_while_the_check_starts_leaves_one_warm_process(tmp_path, monkeypatch, warm):
    # the first check starts the warm process, which loads torch (seconds): where a student presses stop. The next
    # check is answered by one process, not a second beside one left loading
    with alice_in_a_kernel(tmp_path, monkeypatch) as (client, run, _temp):
        asked = client.kc.execute("%grade check", stop_on_error=False)
        assert _waited(lambda: _loading(warm), seconds=300, every=0.02)
        assert interrupted(client, asked)["ename"] == "KeyboardInterrupt"
        assert "public checks passed" in run("%grade check")
        assert len(_servers(warm)) == 1


def _loading(folder) -> list[int]:
    """The process a notebook started to load the warm server (``python -m autograder.check.warm_server``)."""
    import psutil  # noqa: PLC0415 - ipykernel's own dependency

    found = []
    for p in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if "autograder.check.warm_server" in " ".join(p.info["cmdline"] or []) and \
                    p.environ().get(warm_server.DIR_ENV) == str(folder):
                found.append(p.pid)
    return found


def test_a_checking_process_that_cannot_start_says_why_and_leaves_nothing(tmp_path, monkeypatch, warm):
    # a broken torch in the student's environment: the magic says what the process said, and leaves no process
    from autograder.check import magic  # noqa: PLC0415 - the kernel's side, in this process

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "torch.py").write_text("raise ImportError('this torch is broken')\n")
    request = {"cells": ["x = 1"], "steps": [], "said": "checked", "notebook": None, "html": None}
    monkeypatch.setenv("PYTHONPATH", str(broken))
    answer = magic.checked(request)
    assert "the checking process did not start: " in answer["error"] and "this torch is broken" in answer["error"]
    assert _servers(warm) == [] and _loading(warm) == [] and list(warm.iterdir()) == []
    monkeypatch.delenv("PYTHONPATH")  # the control: the same request, a torch that loads
    assert "text" in magic.checked(request) and len(_servers(warm)) == 1
