"""The few Linux system calls Python 3.11 does not wrap: unshare, mount, pivot_root, prctl, capset."""
from __future__ import annotations

import ctypes
import os
import platform

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_RELATIME = 1 << 21
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine())
_CAPSET = {"x86_64": 126, "aarch64": 91}.get(platform.machine())
_CAPABILITY_VERSION_3 = 0x20080522
_libc = ctypes.CDLL(None, use_errno=True) if os.name == "posix" else None  # Linux only; never called elsewhere


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _b(value: str | None) -> bytes | None:
    return value.encode() if value is not None else None


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data)), f"mount {target}")


def umount(target: str, flags: int = MNT_DETACH) -> None:
    _check(_libc.umount2(_b(target), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    if _PIVOT_ROOT is None:
        raise OSError(38, f"pivot_root: unknown system call number on {platform.machine()}")
    _check(_libc.syscall(ctypes.c_long(_PIVOT_ROOT), _b(new_root), _b(put_old)), "pivot_root")


def prctl(option: int, value: int) -> None:
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0)), f"prctl {option}")


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies (Linux), and exit now if the parent is already gone.

    Every process a batch starts does this (jobs, zygotes, clones, hosts, workers), so that a ``kill -9`` of
    ``grade autograde`` takes the whole tree down at once. A change of uid clears the setting: a worker
    sets it again after dropping to its own uid.
    """
    if _libc is None:
        return
    try:
        prctl(PR_SET_PDEATHSIG, 9)
    except OSError:
        return
    if os.getppid() != parent:  # it died before we asked
        os._exit(1)


def locked_flags(path: str) -> int:
    """The flags of the mount ``path`` is on that a read-only bind of it must keep: in a user namespace the kernel
    refuses a remount that would drop ``noexec`` or change how access times are kept (locked flags)."""
    try:
        flags = os.statvfs(path).f_flag
    except OSError:
        return 0
    kept = 0
    for st, ms in ((getattr(os, "ST_NOEXEC", 0), MS_NOEXEC), (getattr(os, "ST_NOATIME", 0), MS_NOATIME),
                   (getattr(os, "ST_NODIRATIME", 0), MS_NODIRATIME), (getattr(os, "ST_RELATIME", 0), MS_RELATIME)):
        if st and flags & st:
            kept |= ms
    return kept


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Give up every capability (effective, permitted, inheritable; the ambient set goes with them): a worker in a
    user namespace of the grader's keeps the uid it had, and with it every capability the namespace gave."""
    if _CAPSET is None:
        raise OSError(38, f"capset: unknown system call number on {platform.machine()}")
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    _check(_libc.syscall(ctypes.c_long(_CAPSET), ctypes.byref(header), ctypes.byref(data)), "capset")
