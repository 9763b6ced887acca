"""Unpack a student's .zip safely: no path outside the target, no links, bounded size and entry count.

The archive's own size and the size of its list of entries are checked before zipfile reads either
(``hand_in_sizes.py``), so a huge archive costs the grader nothing (tests/integration/test_staging_limits.py)."""
from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path, PurePosixPath

from . import hand_in_sizes

MAX_ENTRIES = hand_in_sizes.MAX_ENTRIES
MAX_BYTES = hand_in_sizes.MAX_UNPACKED  # uncompressed, in all
MAX_RATIO = 200  # a larger compression ratio on a big entry is a zip bomb, not source code


class ArchiveError(Exception):
    """The archive cannot be used; the message says why, in the student's terms, and ``cause`` as data
    (``corrupt``, ``unreadable``, ``empty_archive``, ``archive_too_large`` for the file itself, ``too_many_entries``,
    ``too_large`` for what it unpacks to, ``zip_bomb``)."""

    def __init__(self, message: str, cause: str = "corrupt"):
        super().__init__(message)
        self.cause = cause


def _safe_name(name: str) -> PurePosixPath | None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        return None
    return path


def _before_opening(archive: Path) -> None:
    """The limits zipfile cannot keep itself: the archive's size, then the size of its list of entries, which
    zipfile reads and turns into objects whole as it opens one (the end record, 22 bytes to 64 KB at its end, says
    it)."""
    size = os.lstat(archive).st_size
    if size > hand_in_sizes.MAX_ARCHIVE:
        raise ArchiveError(hand_in_sizes.archive_refused(archive.name, size), "archive_too_large")
    with open(archive, "rb") as fp:
        end = zipfile._EndRecData(fp)  # zipfile's own reader of the end record, as ZipFile uses it
    if end is None:
        return  # not a zip: ZipFile says so
    # (private names: the same record's fields)
    entries, listed = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]
    if entries > MAX_ENTRIES:
        raise ArchiveError(f"{archive.name} has {entries} entries; at most {MAX_ENTRIES} are accepted",
                           "too_many_entries")
    if listed > hand_in_sizes.MAX_DIRECTORY:
        raise ArchiveError(f"{archive.name}'s list of entries is {hand_in_sizes.words(listed)}; at most "
                           f"{hand_in_sizes.words(hand_in_sizes.MAX_DIRECTORY)} is accepted", "too_many_entries")


def extract(archive: Path, target: Path) -> list[str]:
    """Extract ``archive`` into ``target``; return notes about entries left out."""
    try:
        _before_opening(archive)
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile:
        raise ArchiveError(f"{archive.name} is not a valid .zip archive (it may be corrupt or truncated)") from None
    except OSError as exc:
        raise ArchiveError(f"{archive.name} cannot be read: {exc.strerror}", "unreadable") from None
    notes: list[str] = []
    with zf:
        entries = zf.infolist()
        if not entries:
            raise ArchiveError(f"{archive.name} is empty", "empty_archive")
        if len(entries) > MAX_ENTRIES:
            raise ArchiveError(f"{archive.name} has {len(entries)} entries; at most {MAX_ENTRIES} are accepted",
                               "too_many_entries")
        total = 0
        for info in entries:
            total += info.file_size
            if total > MAX_BYTES:
                raise ArchiveError(f"{archive.name} unpacks to more than {MAX_BYTES // 2**20} MB; "
                                   "submit only your .py files", "too_large")
            if info.file_size > 2**20 and info.compress_size and info.file_size / info.compress_size > MAX_RATIO:
                raise ArchiveError(f"{archive.name}: {info.filename} is compressed "
                                   f"{info.file_size // info.compress_size}:1 "
                                   "(a zip bomb?); it was not unpacked", "zip_bomb")
        for info in entries:
            name = _safe_name(info.filename)
            mode = info.external_attr >> 16
            if name is None:
                notes.append(f"{archive.name}: left out {info.filename!r}, a path outside the archive's folder")
                continue
            if stat.S_ISLNK(mode):
                notes.append(f"{archive.name}: left out {info.filename!r}, a symbolic link (submit the file itself)")
                continue
            dest = target.joinpath(*name.parts)
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as src, open(dest, "wb") as out:
                    left = MAX_BYTES
                    while chunk := src.read(1 << 16):
                        left -= len(chunk)
                        if left < 0:  # the header lied about the size
                            raise ArchiveError(f"{archive.name} unpacks to more than it says; it was not unpacked",
                                               "zip_bomb")
                        out.write(chunk)
            except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as exc:
                raise ArchiveError(f"{archive.name}: {info.filename} cannot be unpacked ({exc})") from None
            except RuntimeError as exc:  # encrypted entries
                raise ArchiveError(f"{archive.name}: {info.filename} cannot be unpacked ({exc})") from None
    return notes
