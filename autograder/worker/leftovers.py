"""What a worker leaves behind outside its own process: System V IPC objects and files in shared folders.

With namespaces, every worker has an IPC namespace of its own (gone when it dies) and the sandbox's /tmp
is emptied after each step. Under ``uid+rlimits`` the machine's /tmp, /var/tmp and /dev/shm and, if the
kernel refuses a private IPC namespace, its System V objects are shared with everything else: the host
removes whatever the step's uid owns there once the step is over, so nothing of a submission reaches the
next one. ``hygiene.py`` also looks at them, so a worker that left something serves no further step.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil

#: folders that every uid may write to, on a machine without a private /tmp
SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm")

_IPC_RMID = 0
_KINDS = {"shm": "shmctl", "sem": "semctl", "msg": "msgctl"}


def ipc_objects(uid: int | None = None) -> list[tuple[str, int]]:
    """System V objects visible here (``/proc/sysvipc``), as (kind, id); only ``uid``'s when given."""
    found = []
    for kind in _KINDS:
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                header, *rows = fh.read().splitlines()
        except OSError:
            continue
        columns = header.split()
        for row in rows:
            fields = dict(zip(columns, row.split()))
            owners = {fields.get("uid"), fields.get("cuid")}
            if uid is None or str(uid) in owners:
                ident = fields.get("shmid") or fields.get("semid") or fields.get("msqid")
                if ident is not None:
                    found.append((kind, int(ident)))
    return found


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


def owned_files(uid: int, folders=SHARED_DIRS) -> list[str]:
    """Entries of ``folders`` that ``uid`` owns (top level: what it made there)."""
    found = []
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.stat(follow_symlinks=False).st_uid == uid:
                            found.append(entry.path)
                    except OSError:
                        continue
        except OSError:
            continue
    return found


def remove_files(uid: int) -> None:
    for path in owned_files(uid):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def sweep(uid: int) -> None:
    """Remove what ``uid`` left in the machine's shared places (its processes are dead by now)."""
    remove_ipc(uid)
    remove_files(uid)
