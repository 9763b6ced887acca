"""How big a hand-in may be, each size checked before a byte of it is parsed.

The trusted process (the one that grades the whole class) reads every hand-in before any sandbox starts. With no
bound there, one notebook padded to 200 MB took 5.3 GB of it and a memory limit ended the batch, with no result
for anyone. So each limit below is checked with ``lstat``/``fstat``, or with a read that stops one byte past it,
before anything is parsed. A hand-in over a limit is that submission's problem, in the words below, and the class
goes on (``intake/stage.py``; tests/integration/test_staging_limits.py shows each limit with a control at it, and
the class graded beside a 200 MB notebook with the process tree's memory measured).

- ``MAX_SOURCE``: a ``.py`` file, and the code read from a notebook's cells for one module.
- ``MAX_NOTEBOOK``: a notebook's JSON. The bundle's notebooks are 7-10 KB as released (``grade release``);
  the largest, with ten attention heatmaps and loss plots saved at twice the screen's resolution (PNG
  outputs, 38-48 KB each), is 0.4 MB. 10 MB is 25 times that: no honest notebook of this unit reaches it,
  and one that does is almost all outputs, which the student clears before handing it in again. Parsing
  JSON takes up to about 25 times its size in Python objects (a list of empty lists), so the limit also
  bounds one parse: 260 MB for the worst notebook at the limit, measured; notebooks are read one at a time.
- ``MAX_ARCHIVE``: the ``.zip`` file itself, before it is opened; ``MAX_DIRECTORY``: its list of entries
  (zipfile reads it whole: a 50 MB list of empty entries took 316 MB). What it unpacks to: ``MAX_UNPACKED``
  bytes in ``MAX_ENTRIES`` entries, and no entry compressed more than ``unzip.MAX_RATIO`` to one.
- A folder is held to what a ``.zip`` may unpack to: ``MAX_UNPACKED`` bytes in ``MAX_ENTRIES`` files and
  folders, counted where staging looks (not through links, nor in ``.git``, ``__pycache__`` and the like).
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

MB = 2**20
MAX_SOURCE = 2 * MB
MAX_NOTEBOOK = 10 * MB
MAX_UNPACKED = 50 * MB
MAX_ENTRIES = 2000
#: a .zip never needs more than what it may unpack to, with its entries' headers
MAX_ARCHIVE = MAX_UNPACKED + MB
#: the list of entries in a .zip: 2000 entries with names of a few hundred characters
MAX_DIRECTORY = MB


class TooLarge(Exception):
    """A hand-in over a limit: the message says which and how to hand it in, ``cause`` as data
    (``notebook_too_large``, ``folder_too_large``, ``too_many_files``)."""

    def __init__(self, message: str, cause: str):
        super().__init__(message)
        self.cause = cause


def words(size: int) -> str:
    """``10 MB``, ``200.4 MB``, ``512 KB``."""
    if size >= MB:
        return f"{size // MB} MB" if size % MB == 0 else f"{size / MB:.1f} MB"
    return f"{-(-size // 1024)} KB"


def read_at_most(path: Path, limit: int) -> tuple[bytes | None, int]:
    """(the file's bytes, its size), or (None, its size) when it is over ``limit``: nothing is read then.

    The size is the open file's own (``fstat``), and the read stops one byte past that size: a file that grew
    meanwhile is not read on (OSError, as for a file that cannot be read). Only a regular file is read, and
    opening it never waits (a FIFO): OSError otherwise. (Staging refuses links before it reads anything.)"""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > limit:
            return None, info.st_size
        data = f.read(info.st_size + 1)
    if len(data) > info.st_size:
        raise OSError(errno.EAGAIN, "it changed while it was read", str(path))
    return data, len(data)


def notebook_refused(label: str, size: int) -> str:
    return (f"{label} is {words(size)}; notebooks over {words(MAX_NOTEBOOK)} are not graded: clear its outputs "
            "(in Jupyter: Edit > Clear Outputs of All Cells), save it and hand it in again")


def check_notebook(path: Path, label: str) -> None:
    """TooLarge (``notebook_too_large``) when the notebook at ``path`` is over ``MAX_NOTEBOOK`` (by ``lstat``)."""
    size = os.lstat(path).st_size
    if size > MAX_NOTEBOOK:
        raise TooLarge(notebook_refused(label, size), "notebook_too_large")


def archive_refused(label: str, size: int) -> str:
    return (f"{label} is {words(size)}; .zip archives over {words(MAX_ARCHIVE)} are not graded: "
            "hand in only your exercise files")


def check_folder(root: Path, label: str, ignored: set[str]) -> None:
    """TooLarge when the folder holds more than ``MAX_ENTRIES`` files and folders (``too_many_files``) or more
    than ``MAX_UNPACKED`` bytes of files (``folder_too_large``), counted where staging looks: never through a
    link, nor into a folder named in ``ignored`` or starting with ``.``. The walk stops at the first limit
    passed, so it costs at most ``MAX_ENTRIES`` entries whatever the folder holds."""
    entries = total = 0
    todo = [root]
    while todo:
        folder = todo.pop()
        try:
            listing = os.scandir(folder)
        except OSError:
            if folder == root:
                raise
            continue  # as staging's own walk: a folder it cannot list holds nothing it reads
        with listing:
            for entry in listing:
                entries += 1
                if entries > MAX_ENTRIES:
                    raise TooLarge(f"{label}/ holds more than {MAX_ENTRIES} files and folders; hand in only your "
                                   "exercise files", "too_many_files")
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in ignored and not entry.name.startswith("."):
                        todo.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
                    if total > MAX_UNPACKED:
                        raise TooLarge(f"{label}/ holds more than {words(MAX_UNPACKED)} of files; hand in only "
                                       "your exercise files", "folder_too_large")
