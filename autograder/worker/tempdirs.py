"""The grader's own folders in the system temp folder: each run leaves none behind, even when killed.

Each folder is named ``<prefix><pid>-<random>`` after the process that made it, which removes it when it is
done. A run killed with ``kill -9`` cannot; so every run first sweeps away the folders of its prefix whose
process is no longer alive.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def alive(pid: int) -> bool:
    """Running (a zombie whose parent never reaped it is not)."""
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


def sweep(prefix: str, base: str | None = None) -> None:
    """Remove ``prefix*`` folders of processes that are gone (and empty ones of older runs, named without a pid)."""
    base = base or tempfile.gettempdir()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        pid = entry.name[len(prefix):].split("-", 1)[0]
        if pid.isdigit():
            if not alive(int(pid)):
                shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.rmdir(entry.path)  # an older run's empty folder; a full one is left alone
            except OSError:
                pass


def make(prefix: str, base: str | None = None, mode: int | None = None) -> Path:
    """A fresh folder ``<prefix><our pid>-XXXX``, after sweeping the litter of dead runs."""
    sweep(prefix, base)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=base))
    if mode is not None:
        os.chmod(path, mode)
    return path
