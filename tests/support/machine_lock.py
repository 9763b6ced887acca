"""One machine-wide lock for the tests that use fixed paths or machine-wide state (marker files in /tmp,
/run/lock, fixed uids, the machine's System V IPC objects): a second test suite running beside this one (CI
beside a developer's run) takes its turn instead of seeing, or removing, what this one made.

Any user may make the lock file first (it is in ``/tmp``): it is opened without following a link and without
waiting on a FIFO, read-only (a lock needs no more, so a suite of another user's may lock the file root made, and
the other way round), and used only if it is a regular file; anything else stops the suite in one line."""
from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path

LOCK = Path("/tmp/.attention-kit-tests.lock")
_SAFE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _open() -> int:
    for _ in range(10):
        try:
            fd = os.open(LOCK, _SAFE)  # as it is: an existing file, whoever made it
        except FileNotFoundError:
            try:
                fd = os.open(LOCK, _SAFE | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue  # made meanwhile by another suite
        except OSError as exc:
            raise RuntimeError(f"{LOCK}: {exc.strerror} (a link is not followed); remove it") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RuntimeError(f"{LOCK} is not a regular file; remove it")
        return fd
    raise RuntimeError(f"{LOCK} keeps appearing and going; remove it")


@contextlib.contextmanager
def machine_to_ourselves():
    fd = _open()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
