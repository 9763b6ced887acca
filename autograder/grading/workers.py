"""Start the zygote and talk to the per-step workers it forks.

The zygote is a separate interpreter started with ``sys.executable -I -S``: it imports torch and the
``autograder.worker`` package only, so nothing it or its children can read holds the reference
solutions or the hidden suites. Each step of each submission gets its own forked worker, so a crash,
a monkeypatch or a changed RNG state in one step cannot reach another.
"""
from __future__ import annotations

import importlib.util
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

from . import uids

WORKER_PACKAGE = Path(__file__).resolve().parent.parent / "worker"

_BOOT = """
import sys, importlib.util
control_fd, uid_base, most, package_dir, *site_dirs = sys.argv[1:]
sys.path.extend(site_dirs)
spec = importlib.util.spec_from_file_location("attention_worker", package_dir + "/__init__.py",
                                              submodule_search_locations=[package_dir])
module = importlib.util.module_from_spec(spec)
sys.modules["attention_worker"] = module
spec.loader.exec_module(module)
import attention_worker.zygote as zygote
zygote.main(int(control_fd), int(uid_base), site_dirs, most)
"""


class WorkerError(Exception):
    """The worker died, hung, or broke the protocol while serving a step."""

    def __init__(self, reason: str, limit: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.limit = limit  # which limit was hit, if one was


def site_dirs() -> list[str]:
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    spec = importlib.util.find_spec("torch")  # where it lives, without importing it here
    if spec is not None and spec.submodule_search_locations:
        dirs.add(str(Path(list(spec.submodule_search_locations)[0]).resolve().parent))
    return sorted(dirs)


def most_isolation() -> str:
    """The strongest isolation to try: AUTOGRADER_ISOLATION (namespaces, uid+rlimits, rlimits) caps it."""
    wanted = os.environ.get("AUTOGRADER_ISOLATION", "namespaces")
    if wanted not in ("namespaces", "uid+rlimits", "rlimits"):
        raise ValueError(f"AUTOGRADER_ISOLATION={wanted!r}: expected namespaces, uid+rlimits or rlimits")
    return wanted


class Zygote:
    """A preloaded interpreter that forks one worker per step.

    Its workers run as the uids of a block it claims for its lifetime (``uids.py``): zygotes that run
    side by side (``--jobs``, or two graders on one machine) never share a uid, so one job's fork bomb
    cannot use up another's process count, nor one's clean-up kill another's workers.
    """

    def __init__(self) -> None:
        uid_base, self._uid_lock = uids.claim()
        ours, theirs = socket.socketpair()
        env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
        for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            if key in os.environ:
                env[key] = os.environ[key]
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOT, str(theirs.fileno()), str(uid_base), most_isolation(),
             str(WORKER_PACKAGE), *site_dirs()],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )
        theirs.close()
        self.control = ours
        self._reader = ours.makefile("rb")
        self._hello: dict | None = None
        self.uid_base = uid_base

    @property
    def isolation(self) -> str:
        """What confines the workers, as the zygote found it at start-up (waits for its start-up)."""
        if self._hello is None:
            line = self._reader.readline()
            if not line:
                raise RuntimeError("the grading zygote exited during start-up; see its output above")
            self._hello = json.loads(line)
        return self._hello["isolation"]

    def open(self, request: dict) -> "Sandbox":
        """Fork a host for one submission (``request``: folder, scratch, limits, uid_base)."""
        self.isolation  # noqa: B018 - the start-up line comes first on the control channel
        ours, theirs = socket.socketpair()
        try:
            socket.send_fds(self.control, [json.dumps({"op": "open", **request}).encode("utf-8")], [theirs.fileno()])
        finally:
            theirs.close()
        line = self._reader.readline()
        if not line:
            raise RuntimeError("the grading zygote exited; see its output above")
        return Sandbox(ours, json.loads(line)["pid"], self)

    def reap(self, pid: int) -> str:
        """How a host ended: ``exit N``, ``signal NAME``, or ``running`` if it would not die."""
        socket.send_fds(self.control, [json.dumps({"op": "reap", "pid": pid}).encode("utf-8")], [])
        line = self._reader.readline()
        return json.loads(line)["status"] if line else "gone"

    def close(self) -> None:
        if self._hello is None:  # still starting (or never used): nothing to wind down
            self.process.kill()
        try:
            socket.send_fds(self.control, [json.dumps({"op": "quit"}).encode()], [])
        except OSError:
            pass
        self.control.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def forget(self) -> None:
        """In a forked batch job: drop our copy of another job's zygote, without stopping it."""
        self._reader.close()
        self.control.close()
        os.close(self._uid_lock)  # (the lock stays held through the other copies)

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalZygote(Zygote):
    """Fork hosts straight from this process: for ``grade check`` on a student's own machine.

    Nothing secret lives in a student's ``grade check`` process (only public cases), so it can be its
    own zygote and save a second ``import torch``. Each step still runs in its own forked worker, with
    the time, memory and output limits; no namespaces or uid change (see sandbox.py, level rlimits).
    """

    def __init__(self) -> None:  # noqa: D107 - no separate interpreter
        import torch  # noqa: PLC0415

        from autograder.worker import sandbox, zygote  # noqa: PLC0415

        # One intra-op thread, before any thread pool exists: an OpenMP pool does not survive fork().
        torch.set_num_threads(1)
        zygote.warm_up()
        self._children: set[int] = set()
        self._plan = sandbox.plan_for_zygote(0, [], local=True)

    @property
    def isolation(self) -> str:
        return self._plan.describe()

    def open(self, request: dict) -> "Sandbox":
        from autograder.worker import host  # noqa: PLC0415

        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                ours.close()
                host.run(theirs, request, self._plan)
            finally:
                os._exit(0)
        theirs.close()
        self._children.add(pid)
        return Sandbox(ours, pid, self)

    def reap(self, pid: int) -> str:
        from autograder.worker.host import describe_status  # noqa: PLC0415

        self._children.discard(pid)
        for _ in range(400):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return describe_status(status)
            time.sleep(0.005)
        return "running"

    def close(self) -> None:
        for pid in list(self._children):
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ChildProcessError, ProcessLookupError):
                pass


class Sandbox:
    """The trusted side's handle on one submission's host: spawn a worker per step, end it."""

    def __init__(self, control: socket.socket, pid: int, zygote: Zygote):
        self.control = control
        self.pid = pid
        self.zygote = zygote
        self.dead = False
        self._reader = control.makefile("rb")
        self._ask(None, 30)  # the host says it is ready once confined

    def _ask(self, message: dict | None, timeout: float, fds: list[int] = ()) -> dict:
        if self.dead:
            raise WorkerError("the submission's sandbox is gone")
        try:
            self.control.settimeout(timeout)
            if message is not None:
                socket.send_fds(self.control, [json.dumps(message).encode("utf-8")], list(fds))
            line = self._reader.readline()
        except (OSError, ValueError):
            line = b""
        if not line:
            self.close()
            raise WorkerError("the submission's sandbox stopped answering")
        return json.loads(line)

    def spawn(self, spawn: dict, output: Path, budget: float) -> "Worker":
        ours, theirs = socket.socketpair()
        out = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            self._ask({"op": "spawn", "spawn": spawn, "limits": {"cpu_seconds": budget}}, 30, [theirs.fileno(), out])
        finally:
            theirs.close()
            os.close(out)
        return Worker(ours, self, budget)

    def end(self, wait: float = 0.0) -> str:
        """Kill the current step's worker and all it started; say how the worker had ended."""
        try:
            return self._ask({"op": "end", "wait": wait}, wait + 10)["status"]
        except WorkerError:
            return "gone"

    def close(self) -> None:
        if self.dead:
            return
        self.dead = True
        try:
            socket.send_fds(self.control, [json.dumps({"op": "quit"}).encode("utf-8")], [])
        except OSError:
            pass
        self.control.close()
        if self.zygote.reap(self.pid) == "running":
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.zygote.reap(self.pid)


@dataclass
class Worker:
    """One forked worker serving one step; every request shares the step's time budget."""

    sock: socket.socket
    sandbox: Sandbox
    budget: float
    started: float = field(default_factory=time.monotonic)
    dead: bool = False
    status: str | None = None

    def remaining(self) -> float:
        return self.budget - (time.monotonic() - self.started)

    def begin(self, budget: float) -> None:
        """A new step on this worker: a fresh time budget."""
        self.started, self.budget = time.monotonic(), budget

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
            # The worker is dying on its own: give it a moment, so its own exit status says why.
            self.kill(wait=0.5)
            raise WorkerError(self._death_reason(exc), limit=self._limit()) from None

    def _limit(self) -> str | None:
        status = self.status or ""
        if status.startswith("signal SIGXFSZ"):
            return "output"
        if status.startswith("signal SIGXCPU"):
            return "time"
        if status.startswith("signal SIGKILL"):
            return "memory"
        return None

    def _death_reason(self, exc: Exception) -> str:
        status = self.status or ""
        if status.startswith("signal SIGSEGV") or status.startswith("signal SIGBUS"):
            return "your code crashed the worker process (segmentation fault)"
        if status.startswith("signal SIGXFSZ"):
            return "your code printed or wrote more than allowed (output-size limit)"
        if status.startswith("signal SIGXCPU"):
            return f"your code used more CPU time than the step's limit ({self.budget:g} s)"
        if status.startswith("signal SIGKILL"):
            return "the worker process was killed (memory limit, or a limit of the machine)"
        if status.startswith("exit"):
            return f"your code ended the worker process ({status}: sys.exit, os._exit or similar)"
        if status.startswith("signal"):
            return f"the worker process died ({status})"
        return f"the worker process stopped answering ({exc})"

    def kill(self, wait: float = 0.0) -> None:
        if self.dead:
            return
        self.dead = True
        self.sock.close()
        self.status = self.sandbox.end(wait)

    def close(self) -> None:
        """End a worker whose step is done."""
        self.kill()
