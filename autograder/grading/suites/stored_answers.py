"""The reference answers of a course, kept on disk between runs: computed once per course version and machine.

Every grading run first runs the hidden suites on the reference (``Grader.warm_cache``: about 0.3 s for the
course's 287 cases, on one core while the other waits for it). What that gives depends only on what the
grader's hash covers (course.yml, the reference, the hidden suites, the kit's own code, torch's version) and on
where it runs (torch's CPU kernels, the machine, Python): a file named for all of those keeps it, and the next
run reads it instead (0.06-0.08 s). A changed solution or suite, another torch or CPU is another file; an
unreadable, foreign or misnamed one is computed again and replaced. The newest ``KEEP`` files are kept.

So are the stand-ins' answers a batch was given (``sandbox/standin_answers.py``: the same call, the same answer,
in every run as in every submission of one), in a file beside, with the same key: a batch that starts with them
relays to its reference worker only the calls no earlier batch made (``load_standins``, ``save_standins``).

Where: the user's cache folder (``platformdirs``; root's own under sudo, never the user's), or ``GRADE_CACHE_DIR``,
in a folder named for the uid; ``GRADE_REFERENCE_CACHE=0`` keeps nothing. Never where student code can read it:
the folder is made 0700 and each file 0600 (a worker runs as another uid, or in a mount namespace holding only an
allow-list, which no home folder is on).

Reading a file runs its pickle, so on POSIX every step goes through the folder opened without following a link,
and only if this user owns it and nobody else may enter it; a file in it is read only if it is a regular file
with one link, owned by this user and writable by nobody else. Anything else keeps nothing, and the run computes
the answers as before. Elsewhere (Windows: no owner to check) a file is read with torch's ``weights_only``
unpickler, which builds tensors and plain containers only (0.08 s slower). The key is inside the file too: one
renamed, or moved from another course, is not taken for this one's.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import secrets
import stat
import sys
import time
from pathlib import Path

#: bumped when what a file holds changes shape
FORMAT = 2
#: how many files a folder keeps (the newest): one per course version, kit, torch or CPU it graded with
KEEP = 16
POSIX = os.name == "posix"


def folder() -> Path | None:
    """Where the answers are kept, or None where nothing is kept."""
    if os.environ.get("GRADE_REFERENCE_CACHE", "1") == "0":
        return None
    try:
        chosen = os.environ.get("GRADE_CACHE_DIR")
        if chosen:
            base = Path(chosen).expanduser()
        elif POSIX and os.geteuid() == 0 and Path.home().stat().st_uid != 0:  # sudo: root's own, not the user's
            import pwd

            base = Path(pwd.getpwuid(0).pw_dir) / ".cache" / "attention-autograder"
        else:
            import platformdirs

            base = Path(platformdirs.user_cache_dir("attention-autograder", appauthor=False))
    except Exception:  # noqa: BLE001 - no home (~nobody/x), platformdirs not installed: nothing kept, graded as before
        return None
    return base / (f"reference-answers-{os.geteuid()}" if POSIX else "reference-answers")


def key(grader_hash: str) -> str:
    """The file's name: the grader's identity and what the numbers depend on where it runs."""
    import torch

    where = (f"{FORMAT} {grader_hash} torch {torch.__version__} {torch.backends.cpu.get_cpu_capability()} "
             f"{platform.machine()} {platform.system()} python {sys.version_info[0]}.{sys.version_info[1]}")
    return hashlib.sha256(where.encode()).hexdigest()[:32]


def file_for(grader_hash: str) -> Path | None:
    """The file that keeps this grader's answers here, or None where nothing is kept."""
    where = folder()
    return None if where is None else where / f"{key(grader_hash)}.pt"


#: flags that keep an open from following a link, blocking on a FIFO, or leaking into a child (those this OS has)
_SAFE = (getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
         | getattr(os, "O_BINARY", 0))


class _Folder:
    """The folder, every step inside it made through its descriptor (POSIX: the folder checked once, as opened) or
    its path (elsewhere, where ``dir_fd`` is not available)."""

    def __init__(self, path: Path, fd: int | None):
        self.path, self.fd = path, fd

    def _at(self, name: str) -> str:
        return name if self.fd is not None else str(self.path / name)

    def open(self, name: str, flags: int, mode: int = 0o600) -> int:
        return os.open(self._at(name), flags | _SAFE, mode, dir_fd=self.fd)

    def replace(self, source: str, target: str) -> None:
        os.replace(self._at(source), self._at(target), src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        os.unlink(self._at(name), dir_fd=self.fd)

    def entries(self) -> list[tuple[float, str]]:
        """(modification time, name) of each entry, links not followed."""
        found = []
        for name in os.listdir(self.fd if self.fd is not None else self.path):
            with contextlib.suppress(OSError):
                found.append((os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False).st_mtime, name))
        return found


@contextlib.contextmanager
def _opened(where: Path, make: bool):
    """The folder (made 0700 if ``make``), if it is this user's alone; raises OSError otherwise."""
    if make:
        where.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(where, 0o700)
    if not POSIX:
        yield _Folder(where, None)
        return
    fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise PermissionError(f"{where}: not this user's alone")
        yield _Folder(where, fd)
    finally:
        os.close(fd)


def _trusted(fd: int) -> bool:
    """A regular file with one link, owned by this user, that nobody else can write (POSIX)."""
    info = os.fstat(fd)
    return (stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_uid == os.geteuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def load(grader_hash: str) -> tuple[dict, list] | None:
    """The cache and the requests in the order asked, as a run with the same key kept them; else None."""
    path = file_for(grader_hash)
    if path is None:
        return None
    import torch

    try:
        with _opened(path.parent, make=False) as where:
            fd = where.open(path.name, os.O_RDONLY)
            with os.fdopen(fd, "rb") as opened:
                if POSIX and not _trusted(fd):
                    return None
                # one pickle: the requests asked are the cache's own objects (plans() goes by their ids); without an
                # owner to check (Windows), only tensors and plain containers are built
                kept = torch.load(opened, weights_only=not POSIX)
        if type(kept) is not dict or kept.get("format") != FORMAT or kept.get("key") != path.stem:
            return None
        return kept["cache"], kept["asked"]
    except Exception:  # noqa: BLE001 - none there, not ours alone, cut short, another torch's: computed again
        return None


def save(grader_hash: str, cache: dict, asked: list) -> Path | None:
    """Keep ``cache`` and ``asked`` for the next run (atomically); where, or None if nothing could be kept."""
    path = file_for(grader_hash)
    if path is None:
        return None
    import torch

    return _write(path,
                  lambda out: torch.save({"format": FORMAT, "key": path.stem, "cache": cache, "asked": asked}, out))


def _write(path: Path, write) -> Path | None:
    """``write(file)`` into ``path``, atomically, in the folder made this user's alone; None if nothing was kept."""
    temporary = f".answers-{secrets.token_hex(8)}.tmp"
    try:
        with _opened(path.parent, make=True) as where:
            try:
                with os.fdopen(where.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb") as out:
                    write(out)
                where.replace(temporary, path.name)
            finally:
                with contextlib.suppress(OSError):
                    where.unlink(temporary)
            _prune(where)
    except Exception:  # noqa: BLE001 - not ours alone, a full disk, something that does not pickle: nothing kept
        return None
    return path


# -- the stand-ins' answers -----------------------------------------------------------------------------------------
#: what a file of the stand-ins' answers may weigh in all, read or written (the newest kept first)
MAX_STANDIN_BYTES = 32 * 2**20
#: how such a file begins; then its key, a line; then each answer: its call's key (32 bytes), length (4), frame
_STANDINS = b"attention-autograder stand-in answers 1\n"


def standins_file_for(grader_hash: str) -> Path | None:
    """The file that keeps this grader's stand-in answers here (beside its reference answers), or None."""
    path = file_for(grader_hash)
    return None if path is None else path.with_suffix(".standins")


def load_standins(grader_hash: str) -> list[tuple[bytes, bytes]]:
    """The stand-ins' answers a batch with the same key kept (``standin_answers.py``: a call's key, the answer's
    frame), oldest first; none where there is no such file, or one that is not this user's alone, or not whole.

    Plain bytes, read as such: nothing in the file is run, and each answer goes to a student's worker as the
    reference worker gave it."""
    path = standins_file_for(grader_hash)
    if path is None:
        return []
    try:
        with _opened(path.parent, make=False) as where:
            fd = where.open(path.name, os.O_RDONLY)
            with os.fdopen(fd, "rb") as opened:
                if POSIX and not _trusted(fd):
                    return []
                data = opened.read(MAX_STANDIN_BYTES + 1)
    except OSError:
        return []
    return _answers(data, path.stem)


def _answers(data: bytes, key: str) -> list[tuple[bytes, bytes]]:
    head = _STANDINS + key.encode("ascii") + b"\n"
    if not data.startswith(head):
        return []
    if len(data) > MAX_STANDIN_BYTES:  # more than any batch writes: not one of ours
        return []
    found, at = [], len(head)
    while at < len(data):
        size = int.from_bytes(data[at + 32:at + 36], "big")
        if at + 36 + size > len(data):  # cut short (or more than is read): none of it
            return []
        found.append((data[at:at + 32], data[at + 36:at + 36 + size]))
        at += 36 + size
    return found


def save_standins(grader_hash: str, answers: list[tuple[bytes, bytes]]) -> Path | None:
    """Keep ``answers`` (oldest first) for the next batch, the newest up to ``MAX_STANDIN_BYTES``; where, or None."""
    path = standins_file_for(grader_hash)
    if path is None:
        return None
    head = _STANDINS + path.stem.encode("ascii") + b"\n"
    kept, total = [], len(head)
    for call, frame in reversed(answers):
        if len(call) != 32 or total + 36 + len(frame) > MAX_STANDIN_BYTES:
            continue
        kept.append(call + len(frame).to_bytes(4, "big") + frame)
        total += 36 + len(frame)
    return _write(path, lambda out: out.write(head + b"".join(reversed(kept))))


def _prune(where: _Folder) -> None:
    """Keep the newest ``KEEP`` files of each kind; remove what a killed save left (an hour old)."""
    found = where.entries()
    older = [entry for suffix in (".pt", ".standins")
             for entry in sorted((entry for entry in found if entry[1].endswith(suffix)), reverse=True)[KEEP:]]
    left = [entry for entry in found if entry[1].startswith(".answers-") and time.time() - entry[0] > 3600]
    for _, name in older + left:
        with contextlib.suppress(OSError):
            where.unlink(name)
