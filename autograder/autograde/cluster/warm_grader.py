"""One warm grading process per Dask worker, started once by a WorkerPlugin.

On each worker (and on every worker that joins later: an adaptive Slurm cluster, a worker restarted by
its nanny after a crash) the plugin starts, once, what a ``--jobs`` process has: a zygote (``python -I
-S``, torch imported) and a Grader (the course, the reference, the hidden suites collected, every
reference answer warmed). Submissions are then graded one at a time in that worker.

Everything runs in one thread of the plugin's own, for three reasons: the Grader is not thread-safe (a
worker started with ``--nthreads 2`` still grades one submission at a time); the zygote dies with the
*thread* that started it (``PR_SET_PDEATHSIG`` follows the parent thread), so that thread must live as
long as the worker; and the start-up (seconds) must not block the worker's event loop (heartbeats).

Dask's worker processes are daemonic, so ``multiprocessing`` cannot start children in them (dask/distributed
#2142, #5058). Nothing here needs it: the zygote is a ``subprocess`` and every sandbox is a plain
``fork`` of the zygote, which is not a daemonic process.
"""
from __future__ import annotations

import asyncio
import gc
import linecache
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

from autograder.sandbox.zygote import Zygote
from autograder.worker import tempdirs
from autograder.worker.syscalls import die_with_parent

from . import inherited, unprivileged

NAME = "attention-autograder"


class GraderMismatch(RuntimeError):
    """This worker would not grade as the client expects (another course, solutions, suites, kit or torch)."""


class WarmGrader(WorkerPlugin):
    name = NAME

    def __init__(self, course_file: str, grader_hash: str):
        self.course_file = course_file
        self.grader_hash = grader_hash

    # -- on the worker --------------------------------------------------------------------------
    def setup(self, worker=None) -> None:
        # A worker dies with its nanny at once (a LocalCluster's nanny lives in the client: kill -9 of
        # grade autograde then takes the workers, their zygotes and sandboxes down, as with --jobs).
        # Distributed's own watch of the parent does it too, but only once a thread notices.
        if getattr(worker, "nanny", None):
            die_with_parent(os.getppid())
        self.graded = 0  # submissions this worker graded
        self.worker_address = getattr(worker, "address", "?")
        self._grader = self._staging = None
        self._checked: dict = {}  # RunPolicy.files_refusal's answers, per policy and zygote
        self._busy_since = time.monotonic()  # the start-up counts: a thread stuck there is stuck (stalls.py)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="attention-grader")  # first: teardown needs it
        self._staging = tempdirs.make("grade-staging-", mode=0o700)  # no worker's uid enters it (batch.staging_dir)
        self._ready = self._thread.submit(self._start)

    async def teardown(self, worker=None) -> None:
        """The plugin unregistered (the end of a run: ``executor.run``), replaced, or its worker closing: the
        zygote stops, and the grader, its course and its reference answers leave this worker (``forget``),
        once the submission in progress, if any, is graded. Awaited, not waited for: the worker's event
        loop goes on answering the scheduler meanwhile."""
        closed = self._thread.submit(self._close)
        self._thread.shutdown(wait=False)
        try:
            await asyncio.wrap_future(closed)
        finally:
            if self._staging is not None:
                shutil.rmtree(self._staging, ignore_errors=True)

    def _close(self) -> None:
        grader, self._grader = self._grader, None
        self._ready = None  # its start-up's error, if any, holds the grader's frames
        inherited.forget()
        if grader is not None:
            try:
                grader.close()
            finally:
                forget(grader)

    def busy_seconds(self) -> float | None:
        """How long the grading thread has been starting up or grading its current submission; None if idle."""
        since = self._busy_since
        return None if since is None else time.monotonic() - since

    def _start(self) -> None:
        try:
            self._warm_up()
        finally:
            self._busy_since = None

    def _warm_up(self) -> None:
        warm = inherited.take(self.grader_hash)  # forked from the client (--local-workers): already warm
        if warm is not None:
            grader, zygote = warm
            self._grader = grader.adopt(zygote or Zygote())
            return
        zygote = Zygote()  # imports torch while we import ours and load the course
        try:
            from autograder.grading.suites.session import Grader

            grader = Grader(Path(self.course_file))
            grader.adopt(zygote)
            ours = grader.identity
            if ours != self.grader_hash:
                raise GraderMismatch(
                    f"worker {self.worker_address} would grade with grader {ours}, the client with {self.grader_hash}: "
                    f"{self.course_file}, its solutions and suites, the kit and torch must be the same on every node "
                    "(docs/cluster.md)")
            grader.warm_cache()
            zygote.level  # noqa: B018 - wait for its start-up here, not in the first submission
        except BaseException:
            zygote.close()
            raise
        self._grader = grader

    def _restart_if_dead(self) -> None:
        """A zygote that died (killed from outside) is replaced: the next submission gets a fresh one. A worker
        that dropped root cannot start one with the sandbox's privileges: it ends, and its nanny starts it again
        (as root, until it drops root again: ``unprivileged.py``); Dask gives its task to a worker."""
        zygote = self._grader.zygote
        if zygote.process is not None and zygote.process.poll() is not None:
            if unprivileged.dropped():
                os._exit(75)
            zygote.close()
            self._grader.adopt(Zygote())

    # -- a task's entry -------------------------------------------------------------------------
    def grade(self, payload) -> dict:
        """Grade ``payload`` in the plugin's thread; the task's thread waits for it."""
        return self._thread.submit(self._grade, payload).result()

    def _files_refusal(self, policy, zygote) -> str | None:
        """``RunPolicy.files_refusal`` for this worker's course and staging folder, once per policy and zygote."""
        key = (policy, id(zygote))
        if key not in self._checked:
            self._checked[key] = policy.files_refusal(zygote, self._grader, self._staging)
        return self._checked[key]

    def _grade(self, payload) -> dict:
        from autograder.grading.suites import graded

        self._ready.result()  # the start-up's error, if any, is every task's
        self._restart_if_dead()
        zygote = self._grader.zygote
        why = payload.policy.refusal(zygote.level, zygote.isolation) or self._files_refusal(payload.policy, zygote)
        if why:
            return {"refused": f"worker {self.worker_address}: {why}", "level": zygote.level}
        staged = payload.unpack(self._staging)
        self._busy_since = time.monotonic()
        try:
            done = graded.grade_submission(self._grader, staged, payload.extra)
        finally:
            self._busy_since = None
            payload.discard(staged)
        self.graded += 1
        return {"graded": done, "worker": self.worker_address}


def forget(grader) -> None:
    """Drop what a grader loaded into this process from the course: the modules of its solutions and hidden
    suites (``sys.modules``, and their names in their packages) and the source lines read from them
    (``linecache``: ``inspect.getsource`` of the reference). Then a client on this worker finds neither,
    and the next run loads the course as it is then, not as an earlier run left it."""
    folders = [str(Path(grader.suites).resolve()), str((grader.root / grader.course.solutions).resolve())]

    def of_the_course(path) -> bool:
        return isinstance(path, str) and any(path == f or path.startswith(f + os.sep) for f in folders)

    for name, module in list(sys.modules.items()):
        if of_the_course(getattr(module, "__file__", None)):
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent and getattr(sys.modules.get(parent), child, None) is module:
                delattr(sys.modules[parent], child)
    for path in [p for p in linecache.cache if of_the_course(p)]:
        del linecache.cache[path]
    # The grader froze what it loaded (Grader.warm_cache: gc.freeze), and a frozen cycle is never collected: the
    # reference answers would stay in memory, unreachable but still listed by the collector. Not any more.
    gc.unfreeze()
    gc.collect()
