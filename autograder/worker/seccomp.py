"""A seccomp filter for workers: the system calls that grading never needs are refused (EPERM).

Namespaces, an unprivileged uid and ``no_new_privs`` already stop most of these; the filter takes away
the kernel's attack surface behind them as well: no ``ptrace``, no new namespaces (``unshare``, ``setns``,
``clone`` with ``CLONE_NEWUSER``), no mounts, no kernel keyrings, no BPF or perf events, no
``userfaultfd`` or ``io_uring``, no module loading, no clock or host-name changes. It is a classic BPF
program installed with ``prctl(PR_SET_SECCOMP)`` after ``PR_SET_NO_NEW_PRIVS``; it costs microseconds.
Only x86_64 is described here; elsewhere no filter is installed and the isolation line says so.

Where a worker lacks a namespace, the filter refuses what that namespace would have kept apart (``program``'s
arguments, chosen by ``confine.confine_step`` from the level):

* no network namespace of its own: no socket but a Unix stream or sequenced-packet one, no ``connect``, ``bind``
  or ``listen``, so no TCP, UDP, raw or netlink socket, no loopback service (a Dask scheduler, the LTI server), and no
  Unix socket it did not inherit (a user's systemd or D-Bus session, a datagram to a logging socket): the channel
  to the trusted side is inherited, connected already;
* no IPC namespace of its own: no System V shared memory, semaphores or message queues, no POSIX message queues
  (objects that outlive the worker and that any process of the same uid may open);
* neither a PID namespace nor a uid of its own: no ``setsid`` or ``setpgid``, so every process the worker starts
  stays in its process group, which the host kills whole.

``tests/integration/test_isolation.py`` shows each refused and what is still allowed.
"""
from __future__ import annotations

import ctypes
import platform

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_NEWUSER = 0x10000000

RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000
EPERM, ENOSYS = 1, 38

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET, _AND = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54

#: x86_64 numbers of the refused calls (asm/unistd_64.h)
REFUSED = {
    "ptrace": 101, "syslog": 103, "uselib": 134, "ustat": 136, "sysfs": 139, "vhangup": 153, "pivot_root": 155,
    "_sysctl": 156, "adjtimex": 159, "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165,
    "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170, "setdomainname": 171,
    "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176, "quotactl": 179, "nfsservctl": 180,
    "lookup_dcookie": 212, "clock_settime": 227, "kexec_load": 246, "add_key": 248, "request_key": 249,
    "keyctl": 250, "unshare": 272, "perf_event_open": 298, "name_to_handle_at": 303, "open_by_handle_at": 304,
    "clock_adjtime": 305, "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "finit_module": 313, "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
}
#: refused with ENOSYS, so that the C library falls back to the older call (clone3 -> clone, which is checked)
NOT_THERE = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "clone3": 435}
CLONE = 56
SOCKET, SOCKETPAIR = 41, 53
AF_UNIX = 1
SOCK_TYPE_MASK, SOCK_STREAM, SOCK_SEQPACKET = 0xF, 1, 5
#: without a network namespace: no way to reach a socket the worker did not inherit
NETWORK = {"connect": 42, "bind": 49, "listen": 50, "accept": 43, "accept4": 288}
#: without an IPC namespace: System V IPC and POSIX message queues
IPC = {"shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66, "shmdt": 67,
       "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "semtimedop": 220, "mq_open": 240,
       "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245}
#: without a PID namespace or a uid of its own: the worker's processes stay in its process group
SESSIONS = {"setsid": 112, "setpgid": 109}


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def supported() -> bool:
    return platform.machine() == "x86_64"


def _unix_streams_only(number: int) -> list[tuple[int, int, int, int]]:
    """``socket``/``socketpair`` (``number``): refused unless a Unix stream or sequenced-packet socket (the
    accumulator holds the call's number before and after)."""
    body = [(_LD_W_ABS, 0, 0, 16),                              # the domain (first argument)
            (_JEQ, 1, 0, AF_UNIX),
            (_RET, 0, 0, RET_ERRNO | EPERM),
            (_LD_W_ABS, 0, 0, 24),                              # the type (second argument), less its flags
            (_AND, 0, 0, SOCK_TYPE_MASK),
            (_JEQ, 2, 0, SOCK_STREAM),
            (_JEQ, 1, 0, SOCK_SEQPACKET),
            (_RET, 0, 0, RET_ERRNO | EPERM),
            (_LD_W_ABS, 0, 0, 0)]                               # the call's number again
    return [(_JEQ, 0, len(body), number), *body]


def program(refused: dict[str, int] = REFUSED, not_there: dict[str, int] = NOT_THERE,
            clone_checked: bool = True, network: bool = False, ipc: bool = False,
            sessions: bool = False) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions. ``network``, ``ipc``, ``sessions``: refuse what a network, an
    IPC, a PID namespace (or a uid of its own) would have kept apart (module docstring)."""
    refused = {**refused, **(NETWORK if network else {}), **(IPC if ipc else {}), **(SESSIONS if sessions else {})}
    prog = [(_LD_W_ABS, 0, 0, 4),                               # the architecture
            (_JEQ, 1, 0, AUDIT_ARCH_X86_64),
            (_RET, 0, 0, RET_KILL_PROCESS),                     # a 32-bit call from a 64-bit process: never ours
            (_LD_W_ABS, 0, 0, 0),                               # the call's number
            (_JGE, 0, 1, X32_SYSCALL_BIT),
            (_RET, 0, 0, RET_ERRNO | EPERM)]                    # the x32 ABI
    for errno, table in ((EPERM, refused), (ENOSYS, not_there)):
        for number in sorted(table.values()):
            prog += [(_JEQ, 0, 1, number), (_RET, 0, 0, RET_ERRNO | errno)]
    if network:
        prog += _unix_streams_only(SOCKET) + _unix_streams_only(SOCKETPAIR)
    if clone_checked:
        prog += [(_JEQ, 0, 3, CLONE),
                 (_LD_W_ABS, 0, 0, 16),                         # clone's flags (low 32 bits of its first argument)
                 (_JSET, 0, 1, CLONE_NEWUSER),
                 (_RET, 0, 0, RET_ERRNO | EPERM)]
    return prog + [(_RET, 0, 0, RET_ALLOW)]


def install(instructions: list | None = None, **without) -> bool:
    """Install the filter (``program(**without)`` unless given) on this process (and every process it starts); False
    where it is not supported. Filters stack: a later one refuses more, never less."""
    if not supported():
        return False
    instructions = instructions or program(**without)
    array = (_Filter * len(instructions))(*[_Filter(*i) for i in instructions])
    prog = _Program(len(instructions), ctypes.cast(array, ctypes.POINTER(_Filter)))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
    return True
