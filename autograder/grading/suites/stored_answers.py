"""The reference answers of a course, kept on disk between runs: computed once per course version and machine.

Every grading run first runs the hidden suites on the reference (``Grader.warm_cache``: about 0.3 s for the
course's 287 cases, on one core while the other waits for it). What that gives depends only on what the
grader's hash covers (course.yml, the reference, the hidden suites, the kit's own code, torch's version) and on
where it runs (torch's CPU kernels, the machine, Python): a file named for all of those keeps it, and the next
run reads it instead (0.08 s). A changed solution or suite, another torch or CPU is another file; an unreadable
or foreign one is computed again and replaced.

Where: the user's cache folder (``platformdirs``), or ``GRADE_CACHE_DIR``; ``GRADE_REFERENCE_CACHE=0`` keeps
nothing. Never where student code can read it: the folder is made 0700 and each file 0600 (a worker runs as
another uid, or in a mount namespace holding only an allow-list, which no home folder is on). A file is read
only if this user owns it and nobody else can write it or its folder, since reading it runs its pickle.
"""
from __future__ import annotations

import hashlib
import os
import platform
import stat
import sys
import tempfile
from pathlib import Path

#: bumped when what a file holds changes shape
FORMAT = 1


def folder() -> Path | None:
    """Where the answers are kept, or None where nothing is kept."""
    if os.environ.get("GRADE_REFERENCE_CACHE", "1") == "0":
        return None
    chosen = os.environ.get("GRADE_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser() / "reference-answers"
    import platformdirs  # noqa: PLC0415 - imported on first use

    return Path(platformdirs.user_cache_dir("attention-autograder", appauthor=False)) / "reference-answers"


def key(grader_hash: str) -> str:
    """The file's name: the grader's identity and what the numbers depend on where it runs."""
    import torch  # noqa: PLC0415 - numerics depend on it

    where = (f"{FORMAT} {grader_hash} torch {torch.__version__} {torch.backends.cpu.get_cpu_capability()} "
             f"{platform.machine()} {platform.system()} python {sys.version_info[0]}.{sys.version_info[1]}")
    return hashlib.sha256(where.encode()).hexdigest()[:32]


def _trusted(path: Path) -> bool:
    """Owned by this user, writable by nobody else, in a folder nobody else can write (POSIX)."""
    if os.name != "posix":
        return True
    try:
        for entry in (path, path.parent):
            info = entry.stat()
            if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return False
    except OSError:
        return False
    return True


def load(grader_hash: str) -> tuple[dict, list] | None:
    """The cache and the requests in the order asked, as a run with the same key kept them; else None."""
    where = folder()
    if where is None:
        return None
    path = where / f"{key(grader_hash)}.pt"
    if not path.is_file() or not _trusted(path):
        return None
    import torch  # noqa: PLC0415 - imported on first use

    try:
        kept = torch.load(path, weights_only=False)  # one pickle: the requests asked are the cache's own objects
    except Exception:  # noqa: BLE001 - cut short, another torch's: computed again and replaced
        return None
    if type(kept) is not dict or kept.get("format") != FORMAT:
        return None
    return kept["cache"], kept["asked"]


def save(grader_hash: str, cache: dict, asked: list) -> None:
    """Keep ``cache`` and ``asked`` for the next run (atomically); a folder that cannot be written keeps nothing."""
    where = folder()
    if where is None:
        return
    import torch  # noqa: PLC0415 - imported on first use

    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temporary = tempfile.mkstemp(dir=where, prefix=".answers-", suffix=".tmp")  # mode 0600
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            torch.save({"format": FORMAT, "cache": cache, "asked": asked}, out)
        os.replace(temporary, where / f"{key(grader_hash)}.pt")
    except OSError:
        pass
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
