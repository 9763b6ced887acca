"""``grade ARGS`` as ``python -m autograder.cli ARGS`` runs it, without importing torch again for each command.

A test process starts one server (``python -m tests.support.warm_grade``) the first time it runs ``grade``: it imports
the command line and torch once, runs nothing, and for each command forks a child that sets the command's folder,
environment and standard streams (files the test reads afterwards) and then runs ``autograder.cli``'s ``command_line``,
as the ``grade`` script and ``python -m autograder.cli`` do. Torch's import is 1.6-1.8 CPU-s of every ``grade`` process
(the zygote it starts imports torch again: that one stays, it is the product's). The server forks before any torch
operation, so no thread pool is shared with a child.

What the fork cannot give stays a fresh interpreter (``run_grade`` falls back to ``subprocess.run``): a command
whose environment changes what the interpreter or torch read at start-up (``PYTHON*``, locale, ``ATEN_*``, thread
counts, ``LD_*``), and a command asked for while another runs in the same test process.
"""
from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

#: CPU seconds this process's commands spent in the server's children (which this process does not wait for)
SPENT_IN_CHILDREN = [0.0]
#: what the server imports before its first fork: the command line, the verbs that load torch, torch
PRELOADED = ("autograder.cli", "torch", "safetensors.torch", "autograder.commands.autograde",
             "autograder.commands.check", "autograder.commands.export", "autograder.commands.similarity")
#: environment variables read when an interpreter or torch starts: a command that changes one runs fresh
STARTUP_PREFIXES = ("PYTHON", "LC_", "LANG", "ATEN_", "OMP_", "MKL_", "TORCH", "LD_")


def _fork_and_run(request: dict) -> int:
    """In the server: fork a child that runs the command, wait for it; its pid first, then its status and CPU."""
    pid = os.fork()
    if pid == 0:
        _become_the_command(request)  # never returns
    _reply({"pid": pid})
    _, status, usage = os.wait4(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    _reply({"returncode": code, "cpu": usage.ru_utime + usage.ru_stime})
    return code


def _become_the_command(request: dict) -> None:
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, path, mode in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                               (2, request["stderr"], os.O_WRONLY)):
            opened = os.open(path, mode)
            os.dup2(opened, fd)
            os.close(opened)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        tempfile.tempdir = None  # TMPDIR as this command's environment says, not as the server's first use cached it
        import autograder.cli as cli  # noqa: PLC0415 - imported by the server already

        sys.argv = [cli.__file__, *request["args"]]  # as `python -m autograder.cli` has it
        sys.modules["__main__"].__package__ = "autograder"  # click's usage line: "python -m autograder.cli"
        sys.path[0] = os.getcwd()  # as `python -m` puts the working folder first
        cli.command_line()  # what the `grade` console script and `python -m autograder.cli` call
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the child's own traceback, as the interpreter would print it
        traceback.print_exc()
        code = 1
    threading._shutdown()  # the interpreter waits for the command's other threads before its exit hooks
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve() -> None:
    for module in PRELOADED:  # imported once here, for every child
        importlib.import_module(module)

    _reply({"ready": True})
    for line in sys.stdin:
        sys.stdout.flush()
        sys.stderr.flush()
        _fork_and_run(json.loads(line))


class WarmGrade:
    """The server of one test process, started on first use and ended with the process."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._started_env: dict[str, str] = {}
        self._buffer = b""
        self._owner = os.getpid()
        atexit.register(self._end)

    def _end(self) -> None:
        """At the test process's exit: the server reads the end of its input and ends; wait for it (a kill after 10 s),
        so that no server outlives its process and the interpreter's exit says nothing of one still running."""
        process = self._process
        if process is None or os.getpid() != self._owner:
            return
        try:
            process.stdin.close()
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        except OSError:
            pass
        process.stdout.close()

    def _start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            root = Path(__file__).resolve().parents[2]
            self._started_env = dict(os.environ)
            self._buffer = b""
            self._process = subprocess.Popen([sys.executable, "-m", "tests.support.warm_grade"], cwd=root,
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            if self._message(120) is None:
                self._process.kill()
                raise RuntimeError("the warm grade server did not start in 120 s")
        return self._process

    def _message(self, timeout: float | None) -> dict | None:
        """The server's next line, or None when none came within ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self._process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not selector.select(left):
                    return None
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError("the warm grade server ended")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def can_run(self, env: dict[str, str]) -> bool:
        started = self._started_env if self._process is not None else dict(os.environ)
        return not any(env.get(key) != started.get(key) for key in {*env, *started} if key.startswith(STARTUP_PREFIXES))

    def run(self, args: list[str], cwd: Path, env: dict[str, str],
            timeout: float) -> subprocess.CompletedProcess | None:
        """The command's result, or None when it must run in a fresh interpreter."""
        if not self.can_run(env) or not self._lock.acquire(blocking=False):
            return None
        try:
            if self._owner != os.getpid():  # a process forked from this one has its pipes, not its server
                self._process, self._owner = None, os.getpid()
            server = self._start()
            if not self.can_run(env):
                return None
            command = [sys.executable, "-m", "autograder.cli", *args]
            with tempfile.TemporaryDirectory(prefix="warm-grade-") as folder:
                out, err = Path(folder) / "stdout", Path(folder) / "stderr"
                out.touch()
                err.touch()
                server.stdin.write((json.dumps({"args": list(args), "cwd": str(cwd), "env": env, "stdout": str(out),
                                                "stderr": str(err)}) + "\n").encode())
                server.stdin.flush()
                pid = None
                try:
                    pid = self._message(None)["pid"]
                    ended = self._message(timeout)
                except BaseException:  # an interrupt mid-command: the command ends, as Ctrl-C ends a fresh one, and
                    if pid is not None:  # the server too (left mid-way, it would answer no later command)
                        with contextlib.suppress(OSError):
                            os.kill(pid, signal.SIGKILL)
                    server.kill()
                    server.wait()
                    raise
                if ended is None:
                    os.kill(pid, signal.SIGKILL)
                    self._message(None)
                    raise subprocess.TimeoutExpired(command, timeout, out.read_text(errors="replace"),
                                                    err.read_text(errors="replace"))
                SPENT_IN_CHILDREN[0] += ended["cpu"]
                return subprocess.CompletedProcess(command, ended["returncode"], out.read_text(errors="replace"),
                                                   err.read_text(errors="replace"))
        finally:
            self._lock.release()


if __name__ == "__main__":
    serve()
