"""The grader's own folders in the system temp folder: each run leaves none behind, even when killed.

Each folder is named ``<prefix><pid>-<random>`` and holds a lock file (``.owner.lock``) that the process
that made it keeps locked for as long as it lives (its forked children hold it too). The folder appears
under that name only once locked (made under a hidden name, then renamed); where nothing can be locked (no
``fcntl``), it holds no lock file, and its pid is all there is to go by. A run killed with ``kill -9``
cannot remove its folders; so every run first sweeps away the folders of its prefix whose lock nobody
holds. A pid is no proof of life: another grader in another PID namespace (two containers sharing
``/tmp``) would read a live run's pid as gone, and pids are reused. Folders of older graders, without a
lock, fall back to their pid. A run sweeps only its own user's folders: another user's folder of the same name
is never looked into, and a lock file is never opened through a link nor blocked on by a FIFO in its place
(``locks.held``; ``tests/integration/test_owned_folders.py``). The folders themselves are made by ``mkdtemp`` (a
random name, mode 0700), never taken as found.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from . import locks

LOCK = ".owner.lock"
#: folders this process made, and the descriptor that holds each one's lock
_held: dict[str, int] = {}


def alive(pid: int) -> bool:
    """Running (a zombie whose parent never reaped it is not). In this PID namespace only."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _gone(entry: os.DirEntry, pid: str) -> bool:
    """Is the owner of this folder gone? Its lock says so; without one (an older grader's), its pid."""
    if entry.name.startswith("."):  # being made (its lock file may exist, not yet locked), or its maker died then
        try:
            return time.time() - entry.stat(follow_symlinks=False).st_mtime > 3600
        except OSError:
            return False
    owner = locks.held(os.path.join(entry.path, LOCK))
    if owner is not None:
        return not owner
    return pid.isdigit() and not alive(int(pid))


def _ours(entry: os.DirEntry) -> bool:
    """Made by this user: folders are swept by the user who made them (root's runs by root), no one else's."""
    if not hasattr(os, "geteuid"):
        return True
    try:
        return entry.stat(follow_symlinks=False).st_uid == os.geteuid()
    except OSError:
        return False


def sweep(prefix: str, base: str | None = None) -> None:
    """Remove ``prefix*`` folders whose owner is gone (and empty ones of older runs, named without a pid)."""
    base = base or tempfile.gettempdir()
    _forget_removed()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        name = entry.name[1:] if entry.name.startswith(".") else entry.name
        if not name.startswith(prefix) or not entry.is_dir(follow_symlinks=False) or entry.path in _held:
            continue
        if not _ours(entry):  # another user's (or a name another user took first): never looked into
            continue
        pid = name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() or entry.name.startswith(".") or os.path.exists(os.path.join(entry.path, LOCK)):
            if _gone(entry, pid):
                shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.rmdir(entry.path)  # an older run's empty folder; a full one is left alone
            except OSError:
                pass


def _forget_removed() -> None:
    """Let go of the locks of our folders that have been removed since."""
    for path, fd in list(_held.items()):
        if not os.path.isdir(path):
            os.close(fd)
            del _held[path]


def close_inherited() -> None:
    """In a forked child that must not hold its parent's locks (a host, whose workers run student code)."""
    for fd in _held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


def make(prefix: str, base: str | None = None, mode: int | None = None) -> Path:
    """A fresh folder ``<prefix><our pid>-XXXX``, locked by us where locks exist, after sweeping the litter of dead
    runs."""
    sweep(prefix, base)
    hidden = Path(tempfile.mkdtemp(prefix=f".{prefix}{os.getpid()}-", dir=base))
    fd = -1
    # Where nothing can be locked (no fcntl: Windows), no lock file: one nobody holds tells every other run that the
    # folder's owner is gone, and it would be swept from under us; without one, its pid says (``_gone``).
    if locks.fcntl is not None:
        try:
            fd = os.open(hidden / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            locks.fcntl.flock(fd, locks.fcntl.LOCK_EX)
        except OSError:  # a filesystem without locks (NFS without its lock daemon): nothing of ours is left there
            if fd >= 0:
                os.close(fd)
            shutil.rmtree(hidden, ignore_errors=True)
            raise
    path = hidden.with_name(hidden.name[1:])
    os.rename(hidden, path)
    if fd >= 0:
        _held[str(path)] = fd
    if mode is not None:
        os.chmod(path, mode)
    return path


def remove(path: str | os.PathLike) -> None:
    """Remove a folder of ours and all it holds, its lock let go of first (on NFS, a file still open when it is
    removed leaves a ``.nfs*`` file in its place, and the folder with it)."""
    fd = _held.pop(str(path), None)
    if fd is not None:
        os.close(fd)
    shutil.rmtree(path, ignore_errors=True)


def remove_empty(path: str | os.PathLike) -> None:
    """Remove a folder of ours that should be empty but for its lock (never anything else: a mount point)."""
    fd = _held.pop(str(path), None)
    try:
        os.unlink(os.path.join(path, LOCK))
    except OSError:
        pass
    if fd is not None:
        os.close(fd)
    os.rmdir(path)
