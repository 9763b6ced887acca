"""Is this worker still as it was after importing the submission? If so, it may serve another step.

A worker serves steps one after another for as long as the previous step left no trace that could reach
the next: no file written, no thread or process still running, no torch setting changed (a mode left on, a kernel
registered through ``torch.library``), nothing in torch, its modules, builtins or the student's own modules rebound
(a monkeypatch), no trace hook, signal handler or global module hook added. Any change, and the worker is retired: the
next step gets a fresh one, forked from the clean host. Each step also starts from the same random state, so a reused
worker and a fresh one give the same answers.
"""
from __future__ import annotations

import builtins
import math
import operator
import os
import random
import signal
import sys
import threading
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import leftovers

_WATCHED = [torch, nn, F, torch.Tensor, nn.Module, nn.Linear, nn.Dropout, nn.Parameter, nn.ModuleList,
            torch.autograd, torch.linalg, torch.special, torch.random, type(torch._C._VariableFunctions),
            math, builtins, random, os, sys]
_SIGNALS = [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGALRM", "SIGUSR1", "SIGCHLD") if hasattr(signal, n)]
_uid = getattr(os, "getuid", lambda: -1)  # no uids on Windows


class Same(tuple):
    """Objects held, and compared by identity: equal to another ``Same`` of the very same objects, in order.

    Never ``==`` on the objects, which would run a replaced object's own ``__eq__``."""
    __slots__ = ()

    def __eq__(self, other) -> bool:
        return type(other) is Same and len(self) == len(other) and all(map(operator.is_, self, other))

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    __hash__ = None


def _ids(namespace) -> tuple[tuple, Same]:
    """A namespace's names and what they bind: any name added, removed or rebound changes it."""
    names = vars(namespace)
    return tuple(names), Same(names.values())


def _modules() -> tuple[tuple, Same]:
    return tuple(sys.modules), Same(sys.modules.values())


def _others() -> tuple[int, ...]:
    """Processes other than us (in a sandbox: all but its init; else our children); our own threads."""
    me = os.getpid()
    try:
        tasks = os.listdir(f"/proc/{me}/task")
        if os.getppid() == 1:  # the host is PID 1 of our namespace: everything else in here is ours
            pids = tuple(sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)))
        else:
            pids = tuple(sorted(int(c) for t in tasks for c in open(f"/proc/{me}/task/{t}/children").read().split()))  # noqa: SIM115 - read at once; closed as the read returns
    except OSError:
        return (-1,)
    return pids + (len(tasks),)


def _torch_state() -> tuple:
    module = sys.modules["torch.nn.modules.module"]
    hooks = tuple(Same((getattr(module, name),)) if getattr(module, name) is None
                  or not hasattr(getattr(module, name), "__len__")
                  else len(getattr(module, name)) for name in dir(module) if name.startswith("_global_"))
    return (torch.get_default_dtype(), torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
            torch.are_deterministic_algorithms_enabled(), torch.is_anomaly_enabled(), torch.get_num_threads(),
            torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack(), str(torch.get_default_device()),
            len(getattr(torch.library, "_impls", ())), hooks)  # _impls: the kernels torch.library has registered


def _files(shared: tuple[str, ...]) -> tuple:
    """What is in the scratch folder (and, in a sandbox, its /tmp; else what we own in the machine's shared
    folders): a step may leave nothing behind."""
    try:
        places = [os.getcwd()] + (["/tmp"] if os.getppid() == 1 else [])
        return tuple(tuple(sorted(os.listdir(p))) for p in places) + tuple(leftovers.owned_files(_uid(), shared))
    except OSError:
        return ("?",)


def fingerprint(student_modules: dict, shared: tuple[str, ...] = ()) -> dict:
    """``shared``: machine-wide folders this worker can write to (none with namespaces)."""
    return {
        "files": _files(shared),
        "IPC objects": tuple(leftovers.ipc_objects(_uid())),
        "processes or threads": (_others(), threading.active_count()),
        "torch settings": _torch_state(),
        "patched names": tuple(_ids(ns) for ns in _WATCHED),
        "modules": _modules(),
        "your modules' globals": tuple(_ids(m) for m in student_modules.values()),
        "hooks": (Same((sys.gettrace(), sys.getprofile())), sys.getrecursionlimit(), len(warnings.filters),
                  Same(signal.getsignal(s) for s in _SIGNALS), os.getcwd()),
    }


def with_modules(found: dict, student_modules: dict) -> dict:
    """``found`` (a fingerprint) with the student's modules' globals taken again: after stand-ins are substituted in
    them, which changes nothing else a fingerprint holds."""
    return {**found, "your modules' globals": tuple(_ids(m) for m in student_modules.values())}


def changes(before: dict, after: dict) -> list[str]:
    found = [key for key in before if key != "modules" and before[key] != after.get(key)]
    (names, ids), (now_names, now_ids) = before["modules"], after["modules"]
    n = len(names)  # modules imported since come after: fine; a module replaced or removed is not
    if now_names[:n] != names or Same(now_ids[:n]) != ids:
        found.append("modules")
    return found


#: a worker that holds this much more memory than when it started serves no other module's steps
HELD_BYTES = 256 * 2**20


def resident_bytes() -> int | None:
    """This process's resident memory now (Linux's /proc/self/statm); None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def holds_much(started: int | None) -> bool:
    """Whether this worker holds ``HELD_BYTES`` more memory than when it ``started``: what a module's globals hold
    would count against the next module's steps (the memory limit is the worker's)."""
    now = resident_bytes()
    return started is not None and now is not None and now - started >= HELD_BYTES


def fresh_random_state() -> None:
    """The same random state at the start of every step, whichever worker serves it."""
    torch.default_generator.manual_seed(0)
    random.seed(0)
    numpy_random = sys.modules.get("numpy.random")  # imported by the zygote, so always here
    if numpy_random is not None:
        numpy_random.seed(0)
