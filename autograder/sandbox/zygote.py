"""Start the zygote: the preloaded interpreter that forks one host per submission.

The zygote is a separate interpreter started with the base interpreter (``-I -S``): it imports torch and the
``autograder.worker`` package only, so nothing it or its children can read holds the reference
solutions or the hidden suites. Its command line and environment name none of the instructor's folders (a worker
may read every process's command line under ``uid+rlimits``): where the worker package and site-packages are comes
on its standard input, and it starts in ``/``. Starting it needs no torch here: ``grade autograde`` starts it first
thing, so its ``import torch`` runs beside the grader's own. A batch's jobs each get a clone, forked
from the warm zygote in milliseconds, with a uid block of its own.
"""
from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.worker import protocol
from autograder.worker.isolation import NAMES, Level

from . import uids

if TYPE_CHECKING:
    from .host import Sandbox

WORKER_PACKAGE = Path(__file__).resolve().parent.parent / "worker"

_BOOT = """
import gc
gc.disable()  # until all it loads (torch) is frozen: zygote.main
import sys, importlib.util, json
control_fd, parent, uid_base, most = sys.argv[1:]
line = sys.stdin.readline()  # not on the command line: it names the kit's folder
if not line:  # the parent went first (a Ctrl-C as it started this one): nothing to say on the user's terminal
    raise SystemExit(0)
where = json.loads(line)
package_dir, site_dirs = where["package"], where["site_dirs"]
sys.path.extend(site_dirs)
spec = importlib.util.spec_from_file_location("attention_worker", package_dir + "/__init__.py",
                                              submodule_search_locations=[package_dir])
module = importlib.util.module_from_spec(spec)
sys.modules["attention_worker"] = module
spec.loader.exec_module(module)
import os
import attention_worker.syscalls as syscalls
syscalls.die_with_parent(int(parent))
import attention_worker.leftovers as leftovers
# the search for world-writable folders (swept under uid+rlimits) runs beside the import of torch where that level
# is asked for; where namespaces fail, the plan runs it then (once per zygote)
import attention_worker.isolation as isolation
scan = leftovers.start_discovery() if most == isolation.Level.UID and os.geteuid() == 0 else None
import attention_worker.zygote as zygote
zygote.main(int(control_fd), int(uid_base), site_dirs, most, scan)
"""



def site_dirs() -> list[str]:
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    spec = importlib.util.find_spec("torch")  # where it lives, without importing it here
    if spec is not None and spec.submodule_search_locations:
        dirs.add(str(Path(list(spec.submodule_search_locations)[0]).resolve().parent))
    return sorted(dirs)


def interpreter() -> str:
    """The interpreter the zygote runs: the base one a virtual environment was made from (site-packages come on its
    standard input), so that its command line names no folder of the instructor's (a ``.venv`` in the course's)."""
    base = getattr(sys, "_base_executable", None)
    return base if base and os.access(base, os.X_OK) else sys.executable


def most_isolation() -> Level:
    """The strongest isolation to try: AUTOGRADER_ISOLATION (one of ``isolation.NAMES``) caps it."""
    wanted = os.environ.get("AUTOGRADER_ISOLATION", Level.NAMESPACES.value)
    if wanted not in NAMES:
        raise ValueError(f"AUTOGRADER_ISOLATION={wanted!r}: expected {', '.join(NAMES[:-1])} or {NAMES[-1]}")
    return Level(wanted)


class Zygote:
    """A preloaded interpreter that forks one host per submission.

    Its workers run as the uids of a block it claims for its lifetime (``uids.py``): zygotes that run
    side by side (``--jobs``, or two graders on one machine) never share a uid, so one job's fork bomb
    cannot use up another's process count, nor one's clean-up kill another's workers.
    """

    def __init__(self) -> None:
        uid_base, self._uid_lock = uids.claim()
        ours, theirs = socket.socketpair()
        # one thread everywhere: a thread pool (OpenMP, MKL, numpy's OpenBLAS) does not survive fork()
        env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
        for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "ATEN_CPU_CAPABILITY", "TMPDIR"):  # as ours
            if key in os.environ:
                env[key] = os.environ[key]
        self.process: subprocess.Popen | None = subprocess.Popen(
            [interpreter(), "-I", "-S", "-c", _BOOT, str(theirs.fileno()), str(os.getpid()), str(uid_base),
             most_isolation().value],
            pass_fds=[theirs.fileno()], stdin=subprocess.PIPE, env=env, start_new_session=True, cwd="/",
        )
        theirs.close()
        try:
            self.process.stdin.write(json.dumps({"package": str(WORKER_PACKAGE), "site_dirs": site_dirs()}).encode()
                                     + b"\n")
            self.process.stdin.close()
        except OSError:  # it died at once: its start-up line says so (isolation)
            pass
        self._connect(ours, uid_base)

    def _connect(self, control: socket.socket, uid_base: int) -> None:
        self.control = control
        self._reader = control.makefile("rb")
        self._hello: dict | None = None
        self.uid_base = uid_base
        self._closed = False

    def clone(self) -> "Zygote":
        """A copy of this zygote, forked from it warm (no second ``import torch``), for one batch job.

        It has its own control channel and its own uid block; this zygote reaps it when it ends.
        """
        self.isolation  # noqa: B018 - the start-up line comes first on the control channel
        uid_base, lock = uids.claim()
        ours, theirs = socket.socketpair()
        try:
            protocol.request(self.control, {"op": "clone"}, [theirs.fileno()])
            if protocol.answer(self._reader) is None:
                raise RuntimeError("the grading zygote exited; see its output above")
        except BaseException:
            ours.close()
            uids.let_go(lock)
            raise
        finally:
            theirs.close()
        copy = object.__new__(type(self))
        copy.process, copy._uid_lock = None, lock
        copy._connect(ours, uid_base)
        return copy

    @property
    def isolation(self) -> str:
        """What confines the workers, as the zygote found it at start-up (waits for its start-up)."""
        if self._hello is None:
            self._hello = protocol.answer(self._reader)
            if self._hello is None:
                raise RuntimeError("the grading zygote exited during start-up; see its output above")
        return self._hello["isolation"]

    @property
    def level(self) -> Level:
        """The isolation level alone (``isolation.Level``)."""
        self.isolation  # noqa: B018 - the start-up line
        return Level(self._hello["level"])

    def open(self, request: dict) -> "Sandbox":
        """Fork a host for one submission (``request``: folder, scratch, limits, uid_base)."""
        from .host import Sandbox  # noqa: PLC0415 - imports torch (the wire), which this module does not

        self.isolation  # noqa: B018 - the start-up line comes first on the control channel
        ours, theirs = socket.socketpair()
        try:
            protocol.request(self.control, {"op": "open", **request}, [theirs.fileno()])
        finally:
            theirs.close()
        opened = protocol.answer(self._reader)
        if opened is None:
            raise RuntimeError("the grading zygote exited; see its output above")
        return Sandbox(ours, opened["pid"], self)

    def reap(self, pid: int) -> dict:
        """How a host ended (``protocol.ended``), or ``protocol.RUNNING`` if it would not die."""
        protocol.request(self.control, {"op": "reap", "pid": pid})
        reaped = protocol.answer(self._reader)
        return reaped["status"] if reaped else protocol.GONE

    def close(self) -> None:
        """Stop the zygote (a clone is reaped by the zygote it was forked from)."""
        if self._closed:
            return
        self._closed = True
        if self._hello is None and self.process is not None:  # still starting, or never used
            self.process.kill()
        try:
            protocol.request(self.control, {"op": "quit"})
        except OSError:
            pass
        self._reader.close()
        self.control.close()
        uids.let_go(self._uid_lock)
        if self.process is None:
            return
        try:
            self.process.wait(timeout=15)  # it gives its clones up to 10 s to wind down
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def forget(self) -> None:
        """In a forked batch job: drop our copy of another job's zygote, without stopping it."""
        self._closed = True
        self._reader.close()
        self.control.close()
        uids.let_go(self._uid_lock)  # (the lock stays held through the other copies)

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ClonesForForks:
    """One clone of ``zygote`` for each process about to be forked from this one, each taken by one of them.

    The one way a forked grading process gets its zygote: a batch's ``--jobs`` (``autograde/batch.py``) and a
    LocalCluster's workers (``cluster/inherited.py``). The clones are made before the fork (each forked warm,
    with its own uid block); every forked process inherits them all, and ``take`` keeps its own and forgets
    its copies of the others and of ``zygote`` (without stopping them), so each clone is used by one process.
    """

    def __init__(self, zygote: Zygote, count: int) -> None:
        self.zygote = zygote
        self.clones: list[Zygote] = []
        try:
            for _ in range(count):
                self.clones.append(zygote.clone())
        except BaseException:
            self.close()
            raise
        self._taken = multiprocessing.get_context("fork").Value("i", 0)  # shared by the forked processes

    def take(self, slot: int | None = None) -> Zygote | None:
        """In a forked process: its clone (number ``slot``, or the next one no process took yet), or None if none
        is left for it (a process forked after ``withdraw``)."""
        if slot is None:
            with self._taken.get_lock():
                slot = self._taken.value
                self._taken.value += 1
        for i, clone in enumerate(self.clones):
            if i != slot:
                clone.forget()  # another process's
        self.zygote.forget()  # the forking process's own: never used from a forked one
        return self.clones[slot] if slot < len(self.clones) else None

    def withdraw(self) -> None:
        """In the forking process, once the processes are forked and it will not stop them itself: forget its
        copies (each forked process closes its own); a process forked later gets none."""
        for clone in self.clones:
            clone.forget()
        self.clones = []

    def close(self) -> None:
        """In the forking process: stop the clones (those not withdrawn)."""
        for clone in self.clones:
            clone.close()
