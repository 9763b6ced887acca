"""A LocalCluster's Dask workers run as an unprivileged uid of the run's own, never as root.

``grade autograde --executor dask --local-workers N`` runs as root for the sandbox's namespaces and per-step
uids. What needs root is the zygote (and the hosts it forks), not the Dask worker that talks to it: each
worker is forked from the client warm and takes a clone of the client's zygote (``inherited.py``), a
process of its own, already running, reached through a socket the worker inherits. So each worker drops
root as soon as Dask has made it (this module is its ``preload``), before it registers with the scheduler:
it runs as the first uid of a uid block the client holds for the run (``sandbox/uids.claim``: never a
sandbox's uid, never another grader's), with no supplementary groups, non-dumpable (the kernel's rule on a
change of uid: no process of that uid may trace it) and with ``no_new_privs`` (no setuid program gives
root back). Its zygote stays root and grades as before.

Before it drops root, the worker takes its zygote and lets the grader read what it reads from the course's
files (``inherited.prepare``): the course and the kit may sit in folders only root can read. What it writes
afterwards is in the workers' folder of the run's scratch folder, which the client gives to that uid
(``give_scratch``): Dask's workspace, the staged submissions, the grading's scratch folders. The client (root)
removes it with the run, or the next run does if this one was killed.

The nannies, which fork and stop the workers, run in the client's process, as its user. A worker is no
privilege boundary against its own zygote (it asks for a step's uid and folders: docs/cluster.md); TLS
(``tls.py``) is what keeps other people's code out of it.

Stops: code that reaches a LocalCluster worker (a stolen key, a hole in Dask) acting as root directly.
Shown by tests/system/test_cluster_security.py (the workers' uids, groups and capabilities while they grade), and
tests/system/test_cluster.py (their grades equal --jobs').
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from . import inherited

#: the Dask configuration key that carries the workers' uid from the client to the workers it forks
UID_KEY = "autograder.local-worker-uid"
#: the workers' folder in the run's scratch folder, their ``temporary-directory`` (``give_scratch``)
WORK = "work"
#: the folder Dask puts each worker's workspace in, inside the workers' folder
WORKSPACES = "dask-scratch-space"
_DROPPED: list[int] = []  # the uid this process became, once it dropped root


def wanted() -> bool:
    """Whether the workers must drop root: the client is root (else they run as its user already)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def scratch_base() -> str | None:
    """Where the run's scratch folder goes: the temporary folder, if anyone may pass through every folder above it
    (the workers' uid must reach its own folder in it), else None: the system's default (``/tmp``). A
    ``TMPDIR`` in a home folder only its owner may enter is no place for them."""
    base = Path(tempfile.gettempdir()).resolve()
    if all(os.stat(folder).st_mode & 0o001 for folder in [base, *base.parents]):
        return None
    return "/tmp"


def give_scratch(scratch: Path, uid: int) -> Path:
    """In the client, before the cluster starts: the workers' folder in the run's scratch folder, ``WORK`` (and
    the workspaces' folder Dask would make there as root), belongs to the workers' ``uid``; others may only pass
    through (a sandbox's uid reaches a staged submission by its path, without namespaces). The scratch folder
    itself stays the client's, with its lock (``tempdirs``): a run killed with ``kill -9`` leaves a folder the next
    run sweeps, which it would not look into were it the workers' uid's (tests/system/test_cluster.py)."""
    work = scratch / WORK
    work.mkdir(mode=0o711, exist_ok=True)
    (work / WORKSPACES).mkdir(mode=0o700, exist_ok=True)
    for folder in (work, work / WORKSPACES):
        os.chown(folder, uid, uid)
    for folder in (scratch, work):
        folder.chmod(0o711)
    return work


def dask_setup(worker) -> None:
    """Dask's preload hook, in each worker before it registers: drop root for good."""
    import dask

    uid = dask.config.get(UID_KEY, None)
    if uid is None or not wanted():
        return
    inherited.prepare()  # as root: the zygote, and what the grader reads from the course's files
    drop(int(uid), Path(worker.local_directory), Path(dask.config.get("temporary-directory")))


def dropped() -> bool:
    """Whether this process dropped root (``drop``)."""
    return bool(_DROPPED)


def drop(uid: int, workspace: Path, scratch: Path) -> None:
    """Become ``uid`` (and gid ``uid``, no supplementary groups) in every thread of this process, for good.

    ``workspace`` (Dask made it as root a moment ago) becomes ``uid``'s, and the temporary folder of this
    process is ``scratch``, the workers' folder (``uid``'s, ``give_scratch``): a folder ``uid`` cannot write in is
    no use to it."""
    from autograder.worker import syscalls  # Linux only, as this path is

    for path in [workspace, workspace.with_name(workspace.name + ".dirlock"), *workspace.rglob("*")]:
        if os.path.lexists(path):
            os.chown(path, uid, uid, follow_symlinks=False)
    os.environ["TMPDIR"] = str(scratch)
    tempfile.tempdir = str(scratch)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # glibc changes every thread's uid, not only the calling one's
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid) or os.getgroups():
        raise OSError(f"could not drop root: uids {os.getresuid()}, gids {os.getresgid()}, groups {os.getgroups()}")
    syscalls.prctl(syscalls.PR_SET_NO_NEW_PRIVS, 1)
    _DROPPED.append(uid)
