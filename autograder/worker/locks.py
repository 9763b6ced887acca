"""Proof of life for what a grader shares with the machine: a lock its owner holds, never a pid.

A pid says nothing across PID namespaces (two graders in two containers that share ``/tmp`` see each
other's processes under other numbers, or not at all) and is reused. A ``flock`` held by the owner is
released by the kernel when the owner and every process it forked are gone, and only then. So each
shared thing a grader owns (a uid block, a temporary folder, a control group) has a lock file its owner
holds for as long as it uses it, and a grader sweeps another's leftovers only once it can take that lock.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from . import owned_dirs

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no uid blocks, no sweeps that need a lock
    fcntl = None

FIRST_UID = 1_000_000
BLOCK = 1_000  # uids per block: a host hands them out in turn, one per worker
BLOCKS = 1_000
#: where root keeps the locks of its uid blocks (only root's workers change uid: no one else claims a block): the
#: first of these that is root's alone. Under ``/run`` only root may make a folder, so no one can make it first;
#: the shared lock folders (anyone may make a folder there) serve only where ``/run`` cannot be written, and are
#: used only as ``owned_dirs`` finds them: root's, mode 0700, not a link.
LOCK_DIRS = [Path("/run/attention-autograder-uids"), Path("/run/lock/attention-autograder-uids"),
             Path("/tmp/attention-autograder-uids")]


def lock_dir(said=None) -> tuple[Path, int]:
    """The folder of the uid blocks' locks and a descriptor on it: the first of ``LOCK_DIRS`` that is ours alone
    (made if missing). ``said(line)`` is told each one refused (another user's, a link: ``owned_dirs``); none
    left raises ``owned_dirs.Refused`` with every reason, in one line."""
    reasons = []
    for folder in LOCK_DIRS:
        try:
            return folder, owned_dirs.open_dir(folder, private=True)
        except owned_dirs.Refused as exc:
            reasons.append(str(exc))
            if said is not None:
                said(str(exc))
        except OSError as exc:  # no /run, a read-only one: the next
            reasons.append(f"{folder}: {exc.strerror or exc}")
    raise owned_dirs.Refused("no folder for uid block locks: " + "; ".join(reasons))


def held(path: str | os.PathLike, dir_fd: int | None = None) -> bool | None:
    """Does someone hold the lock file ``path`` (relative to ``dir_fd`` if given)? None: there is no such file.

    Never through a link, never blocked by a FIFO left in its place: anything but a regular file counts as held
    (cannot tell: what it guards is left alone)."""
    if fcntl is None:
        return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0),
                     dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError:
        return True  # cannot tell: as if held
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return True
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def block_held(uid_base: int, skip: Path | None = None) -> bool:
    """Is the uid block starting at ``uid_base`` claimed by a live grader (uids.claim)? Its lock is looked for in
    each folder of ``LOCK_DIRS`` that is ours alone (but ``skip``); another user's folder says nothing."""
    name = f"{(uid_base - FIRST_UID) // BLOCK}.lock"
    for folder in LOCK_DIRS:
        if folder == skip:
            continue
        try:
            fd = owned_dirs.open_dir(folder, private=True, make=False)
        except OSError:
            continue
        try:
            if held(name, dir_fd=fd):
                return True
        finally:
            os.close(fd)
    return False
