"""Landlock: a worker's filesystem allow-list, no network, and no signal or abstract socket beyond its own domain.

Where the kit cannot build a root of its own for a worker (no mount namespace: root in a container that refuses
``unshare``, or a normal user where unprivileged user namespaces are refused), the kernel's Landlock LSM gives the
same allow-list another way: a worker reads only what the namespaces level would have bind-mounted (``read_only``),
writes only its scratch folder (``read_write``), and every access right the running kernel knows is handled, so
anything else is refused whatever the files' modes (the reference, the hidden suites, the user's home, other
submissions). From ABI 4 no TCP ``bind``/``connect``; from ABI 6 signals and abstract Unix sockets stay inside the
worker's own domain (each worker restricts itself after its fork: a domain of its own, apart from every other
worker's, the host's and the grader's). Three system calls, called through ctypes (x86_64 numbers; elsewhere the
ABI reads as 0 and the level is not offered). ``tests/integration/test_isolation.py`` and
``tests/system/test_normal_user.py`` show what it stops.
"""
from __future__ import annotations

import ctypes
import os
import platform
import stat

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}.get(
    platform.machine(), (None, None, None))
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# access rights, by the ABI that introduced them (include/uapi/linux/landlock.h)
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: REFER, 3: TRUNCATE, 5: IOCTL_DEV}
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
#: the ABI from which signals and abstract Unix sockets are scoped to the domain (Linux 6.12)
SCOPES_SIGNALS = 6

#: rights that apply to a file (a rule on a file may hold only these)
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ_ONLY = EXECUTE | READ_FILE | READ_DIR
#: the scratch folder: read, write, make and remove files and folders in it (no devices, sockets, execution)
READ_WRITE = READ_FILE | READ_DIR | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SYM | \
    MAKE_FIFO | REFER | TRUNCATE
DEVICE = READ_FILE | WRITE_FILE | TRUNCATE


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True) if os.name == "posix" else None


def abi() -> int:
    """The Landlock ABI version of the running kernel; 0 where there is none (or it is disabled)."""
    if _libc is None or _CREATE_RULESET is None:
        return 0
    version = _libc.syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0),
                            ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def handled_fs(version: int) -> int:
    """Every filesystem access right ABI ``version`` knows."""
    return sum(bits for since, bits in FS_BY_ABI.items() if version >= since)


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def ruleset(version: int, read_only: list[str], read_write: list[str], devices: list[str]) -> int:
    """A ruleset (its descriptor) for ABI ``version``: every right the ABI knows handled, those of the lists allowed.

    Paths that do not exist are left out; a file gets the file rights of its list only. The paths are opened here
    (``O_PATH``), by whoever calls this: before a worker drops its uid, so that a folder under one the worker cannot
    enter (an interpreter in ``/root``) is still named."""
    fs = handled_fs(version)
    attr = _RulesetAttr(fs, NET_BIND_TCP | NET_CONNECT_TCP if version >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= SCOPES_SIGNALS else 0)
    fd = _check(_libc.syscall(ctypes.c_long(_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                              ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for paths, rights in ((read_only, READ_ONLY), (read_write, READ_WRITE), (devices, DEVICE)):
            for path in paths:
                allow(fd, path, rights & fs)
    except BaseException:
        os.close(fd)
        raise
    return fd


def allow(ruleset_fd: int, path: str, rights: int) -> None:
    """Allow ``rights`` beneath ``path`` (on the file itself, for a file); a path that does not exist is skipped."""
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(target).st_mode):
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights, target)
        _check(_libc.syscall(ctypes.c_long(_ADD_RULE), ctypes.c_int(ruleset_fd), ctypes.c_int(_RULE_PATH_BENEATH),
                             ctypes.byref(rule), ctypes.c_uint32(0)), f"landlock_add_rule {path}")
    finally:
        os.close(target)


def restrict_self(ruleset_fd: int) -> None:
    """Enforce the ruleset on this process and everything it starts (needs ``no_new_privs``); closes it."""
    try:
        _check(_libc.syscall(ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(ruleset_fd), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(ruleset_fd)
