"""Blocks of unprivileged uids for workers, one block per zygote, never shared by two graders at once.

A process-count limit and, without namespaces, the kill of a step's left-over processes both work per
uid; two graders (two batches on one machine, or the jobs of one batch) must therefore never run
workers under the same uid. Each zygote claims a free block by holding an exclusive lock on that
block's lock file for as long as it lives.

Only root's workers change uid: any other user's run as that user, so a normal user claims no block and never
touches the lock folder (another user's, or one an earlier root run left, costs them nothing). Root's lock folder
is the first of ``locks.LOCK_DIRS`` that is root's alone (``worker/owned_dirs.py``); one another user made first
is said in one line and passed over, its links never followed (``tests/integration/test_owned_folders.py``).
"""
from __future__ import annotations

import os
import sys

from autograder.worker import owned_dirs
from autograder.worker.locks import BLOCK, BLOCKS, FIRST_UID, LOCK_DIRS as LOCKS, block_held, lock_dir

#: no lock held: what ``claim`` gives a user whose workers keep their uid
NO_LOCK = -1
_said: set[str] = set()


def needed() -> bool:
    """Whether this process's workers get uids of their own (root's only), and so need a block."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _say_once(line: str) -> None:
    if line not in _said:
        _said.add(line)
        sys.stderr.write(f"warning: {line}\n")  # as console.warn says it; the sandbox imports nothing of the rest


def claim() -> tuple[int, int]:
    """(first uid of a free block, the lock's file descriptor: keep it open while the block is used). A process that
    is not root gets ``(0, NO_LOCK)``: its workers keep its uid."""
    if not needed():
        return 0, NO_LOCK
    refused: list[str] = []
    try:
        folder, folder_fd = lock_dir(said=refused.append)
    except owned_dirs.Refused as exc:  # said in one line by the command line (cli._run), as a user's mistake is
        raise owned_dirs.Refused(f"{exc}; remove one of them, or let root write in {LOCKS[0].parent}") from None
    for line in refused:  # passed over for the next: said once a run
        _say_once(line)
    import fcntl  # noqa: PLC0415 - POSIX: only a grader with its own uids (never grade check) gets here

    try:
        start = os.getpid() % BLOCKS  # spread the search: concurrent graders rarely try the same block first
        for i in range(BLOCKS):
            block = (start + i) % BLOCKS
            try:
                fd = owned_dirs.open_file(folder_fd, f"{block}.lock", os.O_RDWR | os.O_CREAT,
                                          shown=str(folder / f"{block}.lock"))
            except owned_dirs.Refused as exc:  # in a folder of root's alone: only root could have put it there
                _say_once(str(exc))
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if block_held(FIRST_UID + block * BLOCK, skip=folder):  # a grader that locks in another of LOCK_DIRS
                os.close(fd)
                continue
            return FIRST_UID + block * BLOCK, fd
    finally:
        os.close(folder_fd)
    raise OSError(f"all {BLOCKS} uid blocks are in use by other graders")


def let_go(fd: int) -> None:
    """Close a block's lock (``NO_LOCK``: there is none)."""
    if fd != NO_LOCK:
        os.close(fd)


#: the uids of a block a submission's workers take in turn; the block's last uid is the reference worker's
#: alone (reference_server.py), so no student's worker ever runs as the process that holds the reference
STUDENT_UIDS = BLOCK - 1


def for_students(uid_base: int) -> dict:
    """What a submission's host is told of its uids (``host.py`` hands them out in turn)."""
    return {"uid_base": uid_base, "uids": STUDENT_UIDS}


def for_reference(uid_base: int) -> dict:
    """What the reference worker's host is told: the block's last uid, which no submission's worker gets."""
    return {"uid_base": uid_base + STUDENT_UIDS, "uids": 1}
