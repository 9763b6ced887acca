"""Folders the kit keeps state in outside the user's home (uid block locks, the warm ``grade check`` server's
socket), made and opened as their owner's, never through a link.

A folder with a fixed name in a place every user may write in (``/run/lock``, ``/tmp``) can be made first by
anyone. Taken as it was found, another user's folder full of links had root create the files the links named (an
``/etc/nologin`` of their choosing), and a folder an earlier root run left there ended every other user's run in a
traceback. So a folder is made with ``mkdir`` (mode 0700), opened without following a link
(``O_DIRECTORY | O_NOFOLLOW``), and used only if what was opened is a folder of this user's that nobody else may
write in (a ``private`` one: that nobody else may enter either); the files inside are opened through that
descriptor (``dir_fd``) with ``O_NOFOLLOW``, and used only if each is a regular file of this user's with one link.
Anything else is refused with one line that says whose it is and what to do (``Refused``); the caller goes on
without it, or with a folder of its own elsewhere. ``tests/integration/test_owned_folders.py`` shows each refusal.

Part of the worker package: the zygote's interpreter (``python -I -S``) imports nothing outside it.
"""
from __future__ import annotations

import errno
import os
import stat

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO left in a file's place must not block the open


class Refused(OSError):
    """A folder or file that is not this user's alone; ``str()`` is the one line that says why and what to do."""


def _euid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else -1


def who(uid: int) -> str:
    """``name (uid N)``, or ``uid N`` for a uid without a name here."""
    try:
        import pwd  # noqa: PLC0415 - POSIX only

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _why_not(shown: str, name: str, dir_fd: int | None) -> Refused | None:
    """Why a folder that could not be opened is not ours to use (a link, a file, another user's), if it is not."""
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return Refused(f"{shown} is a symbolic link made by {who(info.st_uid)}, not a folder; it is not followed "
                       f"(remove it)")
    if not stat.S_ISDIR(info.st_mode):
        return Refused(f"{shown} is not a folder (made by {who(info.st_uid)}; remove it)")
    if _euid() >= 0 and info.st_uid != _euid():
        return _not_ours(shown, info.st_uid)
    return None


def _not_ours(shown: str, uid: int) -> Refused:
    return Refused(f"{shown} belongs to {who(uid)}, not to {who(_euid())}; it is not used (its owner or root may "
                   f"remove it)")


def open_dir(path: str | os.PathLike, *, private: bool = True, make: bool = True, dir_fd: int | None = None,
             shown: str | None = None) -> int:
    """A descriptor on the folder ``path`` (made, mode 0700, if missing and ``make``), relative to ``dir_fd`` if given:
    this user's, not a link, and nobody else may write in it (``private``: nor list or enter it).

    Raises ``Refused`` with the reason in one line; ``FileNotFoundError`` when it is missing and not to be made;
    another ``OSError`` when it cannot be made (a read-only or missing parent)."""
    name = os.fspath(path)
    shown = shown or name
    if make:
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
        except FileExistsError:
            pass
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        refused = _why_not(shown, name, dir_fd)
        if refused is not None:
            raise refused from None
        raise
    try:
        check_dir(fd, shown, private=private)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_dir(fd: int, shown: str, *, private: bool = True) -> None:
    """Refuse the folder open on ``fd`` unless it is this user's and nobody else may write in it (``private``: nor
    list or enter it)."""
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode):
        raise Refused(f"{shown} is not a folder")
    if _euid() >= 0 and info.st_uid != _euid():
        raise _not_ours(shown, info.st_uid)
    loose = stat.S_IMODE(info.st_mode) & (0o077 if private else 0o022)
    if loose:
        kind = "enter" if private and not loose & 0o022 else "write in"
        raise Refused(f"{shown} has mode {stat.S_IMODE(info.st_mode):04o}: other users may {kind} it, so it is not "
                      f"used (chmod 700 {shown})")


def open_file(dir_fd: int, name: str, flags: int, mode: int = 0o600, *, shown: str | None = None) -> int:
    """Open ``name`` in the folder ``dir_fd`` (``flags``: ``O_RDWR | O_CREAT`` and the like) without following a link
    or blocking on a FIFO; refused (``Refused``) unless it is a regular file of this user's, with one link, that
    nobody else may write. A file just made by ``O_CREAT`` is ours."""
    shown = shown or name
    try:
        fd = os.open(name, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{shown} is a symbolic link; it is not followed (remove it)") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{shown} is not a regular file; it is not used (remove it)")
        if _euid() >= 0 and info.st_uid != _euid():
            raise Refused(f"{shown} belongs to {who(info.st_uid)}; it is not used (remove it)")
        if info.st_nlink != 1 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise Refused(f"{shown} has other links or may be written by other users; it is not used (remove it)")
    except BaseException:
        os.close(fd)
        raise
    return fd
