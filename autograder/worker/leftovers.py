"""What a worker leaves behind outside its own process: System V IPC objects, files in shared folders, processes.

With namespaces, every worker has an IPC namespace of its own (gone when it dies) and the sandbox's /tmp
is emptied after each step. Under ``uid+rlimits`` the machine's filesystem and, if the kernel refuses a
private IPC namespace, its System V objects are shared with everything else. A worker's uid can write in
two kinds of folders only: the ones every uid may write to (world-writable, sticky or not: ``/tmp``,
``/var/tmp``, ``/dev/shm``, ``/run/lock``, ...) and the ones it made itself inside those. So:

* the zygote finds, once at start-up, every world-writable folder on the machine's local, writable
  filesystems that an unprivileged uid can reach (``discover``: a walk of the folders every uid may
  search, skipping ``/proc``, ``/sys`` and other kernel filesystems);
* after each step the host removes everything the step's uid owns in those folders, at any depth
  (``sweep``): a walk that enters only folders the uid could write in (world-writable, or its own,
  which go whole), so it costs a few hundred ``lstat`` calls, not a walk of the disk;
* before a uid serves another worker, the host checks that it owns no process, no file there and no IPC
  object (``owned``); a uid that still does is skipped, never handed to the next submission.

``hygiene.py`` also looks at them, so a worker that left something serves no further step.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import stat

#: folders that every uid may write to on most Linux machines; ``discover`` adds the others it finds
SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/var/crash", "/var/mail", "/var/spool/mail",
               "/run/shm", "/dev/mqueue")
#: filesystems with nothing a uid could leave a file in for later (kernel views), or not this machine's own disks
SKIP_FILESYSTEMS = frozenset({
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "debugfs", "tracefs", "securityfs", "pstore", "bpf", "configfs",
    "fusectl", "mqueue", "hugetlbfs", "autofs", "binfmt_misc", "nsfs", "rpc_pipefs", "nfsd", "efivarfs", "selinuxfs",
    "nfs", "nfs4", "cifs", "smb3", "sshfs", "fuse.sshfs", "9p", "ceph", "glusterfs", "lustre", "afs",
})
SKIP_PATHS = ("/proc", "/sys")

_IPC_RMID = 0
_KINDS = {"shm": "shmctl", "sem": "semctl", "msg": "msgctl"}


def _ipc_rows():
    """(kind, id, {owner uid, creator uid}) of each System V object visible here (``/proc/sysvipc``)."""
    for kind in _KINDS:
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                header, *rows = fh.read().splitlines()
        except OSError:
            continue
        columns = header.split()
        for row in rows:
            fields = dict(zip(columns, row.split()))
            ident = fields.get("shmid") or fields.get("semid") or fields.get("msqid")
            if ident is not None:
                yield kind, int(ident), {int(fields.get("uid", -1)), int(fields.get("cuid", -1))}


def ipc_objects(uid: int | None = None) -> list[tuple[str, int]]:
    """System V objects visible here, as (kind, id); only ``uid``'s when given."""
    return [(kind, ident) for kind, ident, owners in _ipc_rows() if uid is None or uid in owners]


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def remove_ipc(uid: int) -> int:
    """Remove every System V object ``uid`` owns or created; return how many are left."""
    objects = ipc_objects(uid)
    if objects:
        libc = _libc()
        for kind, ident in objects:
            if kind == "sem":
                libc.semctl(ident, 0, _IPC_RMID)
            else:
                libc[_KINDS[kind]](ident, _IPC_RMID, None)
    return len(ipc_objects(uid))


def _mounts() -> list[tuple[str, str, bool]]:
    """(mount point, filesystem type, read-only) of every mount this process sees."""
    found = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, right = line.split(" - ", 1)
                fields = left.split()
                point = fields[4].encode().decode("unicode_escape")  # \040 for a space
                found.append((point, right.split()[0], "ro" in fields[5].split(",")))
    except (OSError, ValueError, IndexError):
        pass
    return found


def _under(path: str, folders) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def discover(extra=SHARED_DIRS) -> tuple[str, ...]:
    """Every world-writable folder an unprivileged uid can reach on this machine's local, writable
    filesystems, as the fewest roots a ``sweep`` must walk (a world-writable folder inside another is
    reached from it). A walk of every folder that every uid may search: done once, by the zygote."""
    mounts = _mounts()
    skip = [p for p, fstype, ro in mounts if ro or fstype in SKIP_FILESYSTEMS] + list(SKIP_PATHS)
    starts = sorted({p for p, fstype, ro in mounts if not _under(p, skip)} | {p for p in extra if os.path.isdir(p)})
    # The walk goes down from each start one folder at a time and enters no skipped folder, so a folder below a
    # skipped one is never reached: an entry is skipped by its own path alone (a set lookup, not a prefix match
    # against every skipped path), and a start below a skipped folder is not entered.
    skipped = frozenset(skip)
    found: set[str] = set()
    seen: set[tuple[int, int]] = set()
    for start in starts:
        try:
            st = os.lstat(start)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH:
            found.add(start)
        if _under(start, skip):
            continue
        stack = [start]
        while stack:
            folder = stack.pop()
            try:
                entries = os.scandir(folder)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    try:
                        if not entry.is_dir(follow_symlinks=False):
                            continue
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    key = (st.st_dev, st.st_ino)
                    if key in seen or entry.path in skipped:
                        continue
                    seen.add(key)
                    if st.st_mode & stat.S_IWOTH:
                        found.add(entry.path)
                    if st.st_mode & stat.S_IXOTH:  # a folder every uid may enter: what is below is reachable
                        stack.append(entry.path)
    return tuple(sorted(f for f in found if os.path.dirname(f) not in found or f == "/"))


def _may_write(st: os.stat_result, uid: int) -> bool:
    """Could ``uid`` (no groups but its own gid, which equals it) have made something in this folder?"""
    return bool(st.st_mode & stat.S_IWOTH) or st.st_uid == uid or (st.st_gid == uid and st.st_mode & stat.S_IWGRP)


def owned_files(uid: int, folders=SHARED_DIRS) -> list[str]:
    """What ``uid`` owns in ``folders``, at any depth (a folder of its own counts once, whole).

    Only folders ``uid`` could write in are entered: nothing it made can be anywhere else below them
    (a world-writable folder deeper down, behind one it cannot write, is a root of its own: ``discover``).
    """
    found = []
    stack = list(folders)
    seen: set[tuple[int, int]] = set()
    while stack:
        folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_uid == uid:
                    found.append(entry.path)
                elif stat.S_ISDIR(st.st_mode) and _may_write(st, uid) and (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    stack.append(entry.path)
    return found


def processes(uid: int) -> list[int]:
    """Processes (not zombies) whose real, effective or saved uid is ``uid``."""
    found = []
    wanted = str(uid)
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as fh:
                state = uids = ""
                for line in fh:
                    if line.startswith("State:"):
                        state = line.split()[1]
                    elif line.startswith("Uid:"):
                        uids = line
                        break
        except OSError:
            continue
        if state != "Z" and wanted in uids.split()[1:4]:
            found.append(int(name))
    return found


def remove_files(uid: int, folders=SHARED_DIRS) -> None:
    for path in owned_files(uid, folders):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def sweep(uid: int, folders=SHARED_DIRS) -> None:
    """Remove what ``uid`` left in the machine's shared places (its processes are dead by now)."""
    remove_ipc(uid)
    remove_files(uid, folders)


def owners(first: int, count: int, folders=SHARED_DIRS) -> dict[int, list[str]]:
    """Which uids of ``first .. first + count - 1`` still own something on the machine (a process, a file
    in ``folders`` at any depth, a System V object), and what: one pass over each, for a whole uid block."""
    block = range(first, first + count)
    found: dict[int, list[str]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/status") as fh:
                    state = ""
                    for line in fh:
                        if line.startswith("State:"):
                            state = line.split()[1]
                        elif line.startswith("Uid:"):
                            for uid in {int(u) for u in line.split()[1:4]} if state != "Z" else ():
                                if uid in block:
                                    found.setdefault(uid, []).append(f"process {name}")
                            break
            except OSError:
                continue
    stack, seen = list(folders), set()
    while stack:
        folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_uid in block:
                    found.setdefault(st.st_uid, []).append(entry.path)
                elif stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) not in seen and (
                        st.st_mode & stat.S_IWOTH or (st.st_gid in block and st.st_mode & stat.S_IWGRP)):
                    seen.add((st.st_dev, st.st_ino))
                    stack.append(entry.path)
    for kind, ident, uids in _ipc_rows():
        for uid in (u for u in uids if u in block):
            found.setdefault(uid, []).append(f"System V {kind} {ident}")
    return found


# -- the one-time scan, run beside the zygote's import of torch ------------------------------------
def start_discovery() -> tuple[int, int]:
    """Fork a child that runs ``discover``; (its pid, the pipe to read its answer from)."""
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(read)
            from . import syscalls  # noqa: PLC0415 - in the forked child only

            syscalls.die_with_parent(parent)
            os.write(write, "\0".join(discover()).encode())
        finally:
            os._exit(0)
    os.close(write)
    return pid, read


def finish_discovery(scan: tuple[int, int] | None) -> tuple[str, ...]:
    """The folders found by ``start_discovery``'s child (run here if there was none)."""
    if scan is None:
        return discover()
    pid, read = scan
    with os.fdopen(read, "rb") as fh:
        data = fh.read().decode()
    os.waitpid(pid, 0)
    return tuple(data.split("\0")) if data else discover()


def cancel_discovery(scan: tuple[int, int] | None) -> None:
    if scan is not None:
        pid, read = scan
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.close(read)
        os.waitpid(pid, 0)
