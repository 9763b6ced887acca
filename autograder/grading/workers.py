"""Start the zygote and talk to the per-step workers it forks.

The zygote is a separate interpreter started with ``sys.executable -I -S``: it imports torch and the
``autograder.worker`` package only, so nothing it or its children can read holds the reference
solutions or the hidden suites. Each step of each submission gets its own forked worker, so a crash,
a monkeypatch or a changed RNG state in one step cannot reach another.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.worker import wire

WORKER_PACKAGE = Path(__file__).resolve().parent.parent / "worker"

_BOOT = """
import sys, importlib.util
control_fd, package_dir, *site_dirs = sys.argv[1:]
sys.path.extend(site_dirs)
spec = importlib.util.spec_from_file_location("attention_worker", package_dir + "/__init__.py",
                                              submodule_search_locations=[package_dir])
module = importlib.util.module_from_spec(spec)
sys.modules["attention_worker"] = module
spec.loader.exec_module(module)
import attention_worker.zygote as zygote
zygote.main(int(control_fd))
"""


class WorkerError(Exception):
    """The worker died, hung, or broke the protocol while serving a step."""

    def __init__(self, reason: str, limit: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.limit = limit  # which limit was hit, if one was


def site_dirs() -> list[str]:
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    import torch  # noqa: PLC0415 - only to find where it lives

    dirs.add(str(Path(torch.__file__).resolve().parent.parent))
    return sorted(dirs)


class Zygote:
    """A preloaded interpreter that forks one worker per step."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
        for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            if key in os.environ:
                env[key] = os.environ[key]
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOT, str(theirs.fileno()), str(WORKER_PACKAGE), *site_dirs()],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )
        theirs.close()
        self.control = ours
        self._reader = ours.makefile("rb")

    def spawn(self, spawn: dict, timeout: float) -> "Worker":
        ours, theirs = socket.socketpair()
        try:
            socket.send_fds(self.control, [json.dumps(spawn).encode("utf-8")], [theirs.fileno()])
        finally:
            theirs.close()
        line = self._reader.readline()
        if not line:
            raise RuntimeError("the grading zygote exited; see its output above")
        pid = json.loads(line)["pid"]
        return Worker(ours, pid, timeout, self)

    def reap(self, pid: int) -> str:
        """How a worker ended: ``exit N``, ``signal NAME``, or ``running`` if it would not die."""
        socket.send_fds(self.control, [json.dumps({"op": "reap", "pid": pid}).encode("utf-8")], [])
        line = self._reader.readline()
        return json.loads(line)["status"] if line else "gone"

    def close(self) -> None:
        try:
            socket.send_fds(self.control, [json.dumps({"op": "quit"}).encode()], [])
        except OSError:
            pass
        self.control.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalZygote(Zygote):
    """Fork workers straight from this process: for ``grade check`` on a student's own machine.

    Nothing secret lives in a student's ``grade check`` process (only public cases), so it can be its
    own zygote and save a second ``import torch``. Workers are isolated from each other and from this
    process exactly as the zygote's are.
    """

    def __init__(self) -> None:  # noqa: D107 - no separate interpreter
        import torch  # noqa: PLC0415

        from autograder.worker import zygote  # noqa: PLC0415

        # One intra-op thread, before any thread pool exists: an OpenMP pool does not survive fork().
        torch.set_num_threads(1)
        zygote.warm_up()
        self._children: set[int] = set()

    def spawn(self, spawn: dict, timeout: float) -> "Worker":
        from autograder.worker import child  # noqa: PLC0415

        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                ours.close()
                child.serve(theirs, spawn)
            finally:
                os._exit(0)
        theirs.close()
        self._children.add(pid)
        return Worker(ours, pid, timeout, self)

    def reap(self, pid: int) -> str:
        from autograder.worker.zygote import reap  # noqa: PLC0415

        self._children.discard(pid)
        return reap(pid)

    def close(self) -> None:
        for pid in list(self._children):
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


@dataclass
class Worker:
    """One forked worker serving one step; every request shares the step's time budget."""

    sock: socket.socket
    pid: int
    budget: float
    zygote: "Zygote"
    started: float = field(default_factory=time.monotonic)
    dead: bool = False
    status: str | None = None

    def remaining(self) -> float:
        return self.budget - (time.monotonic() - self.started)

    def request(self, message: dict | None = None):
        """Send ``message`` (or only read, when None) and return the worker's answer."""
        if self.dead:
            raise WorkerError("the worker for this step is gone")
        left = self.remaining()
        if left <= 0:
            self.kill()
            raise WorkerError(f"the step ran out of its time limit ({self.budget:g} s)", limit="time")
        self.sock.settimeout(left)
        try:
            if message is not None:
                wire.send(self.sock, message)
            return wire.recv(self.sock)
        except (socket.timeout, TimeoutError):
            self.kill()
            raise WorkerError(f"the step ran out of its time limit ({self.budget:g} s)", limit="time") from None
        except (wire.WireError, OSError) as exc:
            self.kill()
            raise WorkerError(self._death_reason(exc)) from None

    def _death_reason(self, exc: Exception) -> str:
        status = self.status or ""
        if status.startswith("signal SIGSEGV") or status.startswith("signal SIGBUS"):
            return "your code crashed the worker process (segmentation fault)"
        if status.startswith("signal SIGXFSZ"):
            return "your code wrote more output than allowed (output-size limit)"
        if status.startswith("signal SIGKILL"):
            return "the worker process was killed (memory limit, or a limit of the machine)"
        if status.startswith("exit"):
            return f"your code ended the worker process ({status}: sys.exit, os._exit or similar)"
        if status.startswith("signal"):
            return f"the worker process died ({status})"
        return f"the worker process stopped answering ({exc})"

    def kill(self) -> None:
        if self.dead:
            return
        self.dead = True
        # Reap first: if the worker already died, its own exit status says why.
        for target in (-self.pid, self.pid):
            try:
                os.kill(target, signal.SIGSTOP if target < 0 else 0)
            except (ProcessLookupError, PermissionError):
                pass
        self.status = self._reap_if_dead()
        for target in (-self.pid, self.pid):
            try:
                os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.status is None:
            self.status = self.zygote.reap(self.pid)
        self.sock.close()

    def _reap_if_dead(self) -> str | None:
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return self.zygote.reap(self.pid)
        state = stat.rsplit(")", 1)[1].split()[0]
        return self.zygote.reap(self.pid) if state in ("Z", "X") else None

    def close(self) -> None:
        """End a worker whose step is done: no need to learn how it ended."""
        if self.dead:
            return
        self.dead = True
        for target in (-self.pid, self.pid):
            try:
                os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.sock.close()
