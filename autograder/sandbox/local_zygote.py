"""``grade check``'s zygote: the student's own process forks each submission's host (no second interpreter).

The other zygote (``zygote.py``, the client of ``worker/zygote.py``) is a separate interpreter that holds
nothing of the instructor's; this one is the ``grade check`` process itself, which holds only public cases.
"""
from __future__ import annotations

import os
import signal
import socket

import torch

from autograder.worker import confine, host, waits
from autograder.worker.isolation import Level
from autograder.worker.warm_up import warm_up

from .host import Sandbox
from .spawned import SpawnedSandbox


class LocalZygote:
    """Hosts for ``grade check`` on a student's own machine, without a second interpreter.

    Nothing secret lives in a student's ``grade check`` process (only public cases), so it can be its
    own zygote and save a second ``import torch``: it forks each submission's host, which forks a worker
    per step, with the time, memory and output limits (confine.py, level rlimits). Where ``os.fork`` does
    not exist (Windows), each worker is a process of its own instead (``spawned.py``), the time limit
    kept from here.
    """

    def __init__(self) -> None:  # no separate interpreter
        self.forks = hasattr(os, "fork")
        if self.forks:
            # One intra-op thread, before any thread pool exists: an OpenMP pool does not survive fork().
            torch.set_num_threads(1)
            warm_up()
        self._children: set[int] = set()
        self._plan = confine.plan_for_zygote(0, [], local=True)

    @property
    def isolation(self) -> str:
        how = "" if self.forks else "; each worker a process of its own (no fork on this system)"
        return self._plan.describe() + how

    @property
    def level(self) -> Level:
        return self._plan.level

    def open(self, request: dict):
        if not self.forks:
            return SpawnedSandbox(request)
        ours, theirs = socket.socketpair()
        me = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                confine.die_with(me)
                ours.close()
                host.run(theirs, request, self._plan)
            finally:
                os._exit(0)
        theirs.close()
        self._children.add(pid)
        return Sandbox(ours, pid, self)

    def reap(self, pid: int) -> dict:
        self._children.discard(pid)
        return waits.reap(pid, 2.0)

    def close(self) -> None:
        for pid in list(self._children):
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ChildProcessError, ProcessLookupError):
                pass
        self._children.clear()

    def __enter__(self) -> "LocalZygote":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
