"""Write a file so that no reader ever sees half of it, and never rename over what is not a file.

A path the user names may be a device or a pipe (``grade check --html=/dev/null``, ``--out /dev/stdout``).
Renaming a temporary file over it would replace the device itself: run as root, /dev/null became an
ordinary file, and every later ``>/dev/null`` on the machine wrote into it. Such a path is written
through, in place. A regular file, or a new one, is written beside itself and replaced whole.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path


def replaced_whole(path: Path) -> bool:
    """True for a regular file or a missing one; False for a device, a pipe, a socket or a terminal."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True


def commit(tmp: Path | str, dest: Path | str) -> None:
    """Put the finished ``tmp`` at ``dest``: a rename for a file, its bytes written through for anything else."""
    if replaced_whole(dest):
        os.replace(tmp, dest)
        return
    try:
        with open(tmp, "rb") as source, open(dest, "wb") as target:
            shutil.copyfileobj(source, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_bytes(path: Path | str, data: bytes, *, mode: int = 0o644, durable: bool = False) -> Path:
    """Write ``data`` to ``path`` whole or not at all (``durable``: on the disk before the rename)."""
    path = Path(path)
    if not replaced_whole(path):
        with open(path, "wb") as target:
            target.write(data)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # mkstemp makes it private
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: Path | str, text: str, *, mode: int = 0o644, durable: bool = False) -> Path:
    return write_bytes(path, text.encode("utf-8"), mode=mode, durable=durable)
