"""Blocks of unprivileged uids for workers, one block per zygote, never shared by two graders at once.

A process-count limit and, without namespaces, the kill of a step's left-over processes both work per
uid; two graders (two batches on one machine, or the jobs of one batch) must therefore never run
workers under the same uid. Each zygote claims a free block by holding an exclusive lock on that
block's lock file for as long as it lives.
"""
from __future__ import annotations

import os

from autograder.worker.locks import BLOCK, BLOCKS, FIRST_UID, LOCK_DIRS as LOCKS, lock_dir as _lock_dir  # noqa: F401 - the trusted side's names for the worker's


def claim() -> tuple[int, int]:
    """(first uid of a free block, the lock's file descriptor: keep it open while the block is used)."""
    folder = _lock_dir()
    start = os.getpid() % BLOCKS  # spread the search: concurrent graders rarely try the same block first
    for i in range(BLOCKS):
        block = (start + i) % BLOCKS
        fd = os.open(folder / f"{block}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            import fcntl  # noqa: PLC0415 - POSIX: only a grader with its own uids (never grade check) gets here

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return FIRST_UID + block * BLOCK, fd
    raise OSError(f"all {BLOCKS} uid blocks are in use by other graders")


#: the uids of a block a submission's workers take in turn; the block's last uid is the reference worker's
#: alone (reference_server.py), so no student's worker ever runs as the process that holds the reference
STUDENT_UIDS = BLOCK - 1


def for_students(uid_base: int) -> dict:
    """What a submission's host is told of its uids (``host.py`` hands them out in turn)."""
    return {"uid_base": uid_base, "uids": STUDENT_UIDS}


def for_reference(uid_base: int) -> dict:
    """What the reference worker's host is told: the block's last uid, which no submission's worker gets."""
    return {"uid_base": uid_base + STUDENT_UIDS, "uids": 1}
