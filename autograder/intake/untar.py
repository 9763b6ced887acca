"""Unpack a student's tar archive (``.tar.gz``, ``.tgz``, ``.tar``, ``.tar.bz2``, ``.tar.xz``) as a ``.zip`` is
unpacked (``unzip.py``): no path outside the target, no links nor devices, and the same bounds.

The archive's own size is checked before it is opened (``hand_in_sizes.MAX_ARCHIVE``); then its members are read one
at a time, as a stream: at most ``MAX_ENTRIES`` of them, none declared over what may be unpacked, and all together at
most ``MAX_UNPACKED`` bytes, counted as they are written, so a compressed bomb stops at the bound whatever its headers
say. Every refusal is ``unzip.ArchiveError`` with its cause as data, as for a .zip (tests/unit/test_hand_ins.py).
"""
from __future__ import annotations

import lzma
import os
import tarfile
import zlib
from pathlib import Path

from . import hand_in_sizes
from .unzip import ArchiveError, _safe_name

MAX_ENTRIES = hand_in_sizes.MAX_ENTRIES
MAX_BYTES = hand_in_sizes.MAX_UNPACKED


def extract(archive: Path, target: Path) -> list[str]:
    """Extract ``archive`` into ``target``; return notes about members left out."""
    size = os.lstat(archive).st_size
    if size > hand_in_sizes.MAX_ARCHIVE:
        raise ArchiveError(f"{archive.name} is {hand_in_sizes.words(size)}; archives over "
                           f"{hand_in_sizes.words(hand_in_sizes.MAX_ARCHIVE)} are not graded: hand in only your "
                           "exercise files", "archive_too_large")
    notes: list[str] = []
    entries = written = 0
    try:
        with tarfile.open(archive, mode="r:*") as tar:
            for member in _members(tar):
                entries += 1
                if entries > MAX_ENTRIES:
                    raise ArchiveError(f"{archive.name} has more than {MAX_ENTRIES} entries; at most {MAX_ENTRIES} "
                                       "are accepted", "too_many_entries")
                name = _safe_name(member.name)
                if name is None or not name.parts:
                    notes.append(f"{archive.name}: left out {member.name!r}, a path outside the archive's folder")
                    continue
                dest = target.joinpath(*name.parts)
                if member.isdir():
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                if member.issym() or member.islnk():
                    notes.append(f"{archive.name}: left out {member.name!r}, a link (hand in the file itself)")
                    continue
                if not member.isreg():
                    notes.append(f"{archive.name}: left out {member.name!r}, not a regular file")
                    continue
                if written + member.size > MAX_BYTES:
                    raise ArchiveError(f"{archive.name} unpacks to more than {MAX_BYTES // 2**20} MB; submit only your "
                                       ".py files", "too_large")
                written += _copy(tar, member, dest, MAX_BYTES - written, archive.name)
    except tarfile.ReadError as exc:
        raise ArchiveError(f"{archive.name} is not a valid archive (it may be corrupt or truncated: {exc})") from None
    except (EOFError, tarfile.TarError, OSError, zlib.error, lzma.LZMAError, ValueError) as exc:
        raise ArchiveError(f"{archive.name} cannot be unpacked ({exc})") from None
    if entries == 0:
        raise ArchiveError(f"{archive.name} is empty", "empty_archive")
    return notes


def _members(tar: tarfile.TarFile):
    """The members one at a time (``next``), never the whole list at once (``getmembers`` reads every header)."""
    while True:
        member = tar.next()
        if member is None:
            return
        yield member


def _copy(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path, left: int, label: str) -> int:
    dest.parent.mkdir(parents=True, exist_ok=True)
    source = tar.extractfile(member)
    if source is None:
        return 0
    done = 0
    with source, open(dest, "wb") as out:
        while chunk := source.read(1 << 16):
            done += len(chunk)
            if done > left:  # the header lied about the size
                raise ArchiveError(f"{label} unpacks to more than it says; it was not unpacked", "zip_bomb")
            out.write(chunk)
    return done
