"""Proof of life for what a grader shares with the machine: a lock its owner holds, never a pid.

A pid says nothing across PID namespaces (two graders in two containers that share ``/tmp`` see each
other's processes under other numbers, or not at all) and is reused. A ``flock`` held by the owner is
released by the kernel when the owner and every process it forked are gone, and only then. So each
shared thing a grader owns (a uid block, a temporary folder, a control group) has a lock file its owner
holds for as long as it uses it, and a grader sweeps another's leftovers only once it can take that lock.
"""
from __future__ import annotations

import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no uid blocks, no sweeps that need a lock
    fcntl = None

FIRST_UID = 1_000_000
BLOCK = 1_000  # uids per block: a host hands them out in turn, one per worker
BLOCKS = 1_000
LOCK_DIRS = [Path("/run/lock/attention-autograder-uids"), Path("/tmp/attention-autograder-uids")]


def lock_dir() -> Path:
    for folder in LOCK_DIRS:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder
        except OSError:
            continue
    raise OSError("no folder for uid block locks (tried " + ", ".join(map(str, LOCK_DIRS)) + ")")


def held(path: str | os.PathLike) -> bool | None:
    """Does someone hold the lock file ``path``? None: there is no such file."""
    if fcntl is None:
        return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError:
        return True  # cannot tell: as if held
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def block_held(uid_base: int) -> bool:
    """Is the uid block starting at ``uid_base`` claimed by a live grader (uids.claim)?"""
    block = (uid_base - FIRST_UID) // BLOCK
    return any(held(folder / f"{block}.lock") for folder in LOCK_DIRS)
