"""The reference answers of a course, kept on disk between runs: computed once per course version and machine.

Every grading run first runs the hidden suites on the reference (``Grader.warm_cache``: about 0.3 s for the
course's 287 cases, on one core while the other waits for it). What that gives depends only on what the
grader's hash covers (course.yml, the reference, the hidden suites, the kit's own code, torch's version) and on
where it runs (torch's CPU kernels, the machine, Python): a file named for all of those keeps it, and the next
run reads it instead (0.06-0.08 s). A changed solution or suite, another torch or CPU is another file; an
unreadable, foreign or misnamed one is computed again and replaced. The newest ``KEEP`` files are kept.

Where: the user's cache folder (``platformdirs``), or ``GRADE_CACHE_DIR``, in a folder named for the user's uid
(a run under sudo never takes the user's); ``GRADE_REFERENCE_CACHE=0`` keeps nothing. Never where student code
can read it: the folder is made 0700 and each file 0600 (a worker runs as another uid, or in a mount namespace
holding only an allow-list, which no home folder is on).

Reading a file runs its pickle, so on POSIX a file is read only through a descriptor opened without following a
link whose owner is this user and which nobody else can write: whatever path led to it, its bytes were written by
this user (or root). Elsewhere (Windows: no owner to check) it is read with torch's ``weights_only`` unpickler,
which builds tensors and plain containers only (0.08 s slower). The key is inside the file too: a file
renamed, or moved from another course, is not taken for this one's.
"""
from __future__ import annotations

import hashlib
import os
import platform
import stat
import sys
import tempfile
import time
from pathlib import Path

#: bumped when what a file holds changes shape
FORMAT = 2
#: how many files a folder keeps (the newest): one per course version, kit, torch or CPU it graded with
KEEP = 16


def folder() -> Path | None:
    """Where the answers are kept, or None where nothing is kept."""
    if os.environ.get("GRADE_REFERENCE_CACHE", "1") == "0":
        return None
    chosen = os.environ.get("GRADE_CACHE_DIR")
    if chosen:
        base = Path(chosen).expanduser()
    else:
        try:
            import platformdirs  # noqa: PLC0415 - imported on first use
        except ImportError:  # an environment installed before the kit needed it: nothing kept, graded as before
            return None
        base = Path(platformdirs.user_cache_dir("attention-autograder", appauthor=False))
    return base / (f"reference-answers-{os.getuid()}" if hasattr(os, "getuid") else "reference-answers")


def key(grader_hash: str) -> str:
    """The file's name: the grader's identity and what the numbers depend on where it runs."""
    import torch  # noqa: PLC0415 - numerics depend on it

    where = (f"{FORMAT} {grader_hash} torch {torch.__version__} {torch.backends.cpu.get_cpu_capability()} "
             f"{platform.machine()} {platform.system()} python {sys.version_info[0]}.{sys.version_info[1]}")
    return hashlib.sha256(where.encode()).hexdigest()[:32]


def file_for(grader_hash: str) -> Path | None:
    """The file that keeps this grader's answers here, or None where nothing is kept."""
    where = folder()
    return None if where is None else where / f"{key(grader_hash)}.pt"


def _open_trusted(path: Path):
    """``path`` opened for reading, if its pickle may run here (see the module's docstring); else None."""
    if os.name != "posix":
        return open(path, "rb")  # read with the weights_only unpickler; the caller closes it
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def load(grader_hash: str) -> tuple[dict, list] | None:
    """The cache and the requests in the order asked, as a run with the same key kept them; else None."""
    path = file_for(grader_hash)
    if path is None:
        return None
    import torch  # noqa: PLC0415 - imported on first use

    try:
        opened = _open_trusted(path)
        if opened is None:
            return None
        with opened:
            # one pickle: the requests asked are the cache's own objects (plans() goes by their ids)
            kept = torch.load(opened, weights_only=os.name != "posix")
    except Exception:  # noqa: BLE001 - none there, unreadable, cut short, another torch's: computed again
        return None
    if type(kept) is not dict or kept.get("format") != FORMAT or kept.get("key") != path.stem:
        return None
    return kept["cache"], kept["asked"]


def save(grader_hash: str, cache: dict, asked: list) -> Path | None:
    """Keep ``cache`` and ``asked`` for the next run (atomically); where, or None if nothing could be kept."""
    path = file_for(grader_hash)
    if path is None:
        return None
    import torch  # noqa: PLC0415 - imported on first use

    where, name = path.parent, path.stem
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temporary = tempfile.mkstemp(dir=where, prefix=".answers-", suffix=".tmp")  # mode 0600
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as out:
            torch.save({"format": FORMAT, "key": name, "cache": cache, "asked": asked}, out)
        os.replace(temporary, path)
    except Exception:  # noqa: BLE001 - a full disk, something that does not pickle: graded as before, nothing kept
        return None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    _prune(where)
    return path


def _prune(where: Path) -> None:
    """Keep the newest ``KEEP`` files; remove what a killed save left (an hour old)."""
    try:
        kept = sorted(where.glob("*.pt"), key=lambda p: p.stat().st_mtime, reverse=True)
        left = [p for p in where.glob(".answers-*.tmp") if time.time() - p.stat().st_mtime > 3600]
        for path in kept[KEEP:] + left:
            path.unlink(missing_ok=True)
    except OSError:
        pass
