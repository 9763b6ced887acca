"""The isolation levels: how a zygote's workers are confined, one name shared by both sides of the boundary.

Strongest first (docs/isolation.md says what each guarantees, as tested):

``namespaces``
    root: a mount, PID, IPC and network namespace per sandbox, an allow-listed read-only root, a private
    ``/tmp``, a fresh uid per worker.
``userns``
    a normal user where unprivileged user namespaces are allowed: the same namespaces, the user mapped inside
    (one uid: every worker runs as the user, without capabilities).
``uid+landlock``
    root without namespaces (a container that refuses ``unshare``): a fresh uid per worker, and Landlock's
    allow-list, no network, signals scoped.
``landlock``
    a normal user without user namespaces: Landlock's allow-list, no network, signals and abstract sockets scoped to
    the worker (the kernel's ABI 6 or later), seccomp, ``no_new_privs``; the worker keeps the user's uid.
``uid+rlimits``
    root without namespaces or Landlock: a fresh uid per worker; the filesystem is whatever that uid may read, so
    untrusted code is graded only where none of the instructor's files is readable to it (``autograde/reach.py``).
``rlimits``
    limits only (``grade check`` on a student's own code).

The zygote finds what the machine allows (``confine.plan_for_zygote``) and says it on its control channel; the
trusted side reads it back (``sandbox/zygote.py``) and decides whether to grade at it (``autograde/run_policy.py``).
A ``str`` enum: on the wire, in results.json and in every sentence a level is its plain text.
"""
from __future__ import annotations

import enum


class Level(str, enum.Enum):
    RLIMITS = "rlimits"
    UID = "uid+rlimits"
    LANDLOCK = "landlock"
    UID_LANDLOCK = "uid+landlock"
    USERNS = "userns"
    NAMESPACES = "namespaces"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def at_least(self, other: Level) -> bool:
        """Is this level as strong as ``other`` or stronger?"""
        return ORDER.index(self) >= ORDER.index(Level(other))

    @property
    def namespaced(self) -> bool:
        """A root of its own (mount namespace), a PID namespace, a network and IPC namespace."""
        return self in (Level.NAMESPACES, Level.USERNS)

    @property
    def own_uids(self) -> bool:
        """A fresh unprivileged uid per worker (root's levels)."""
        return self in (Level.NAMESPACES, Level.UID_LANDLOCK, Level.UID)

    @property
    def landlocked(self) -> bool:
        """Each worker restricts itself with Landlock (``landlock.py``)."""
        return self in (Level.UID_LANDLOCK, Level.LANDLOCK)


#: weakest first
ORDER = tuple(Level)
#: the names, as the command line and AUTOGRADER_ISOLATION take them, strongest first
NAMES = tuple(level.value for level in reversed(ORDER))
#: what root tries, strongest first (root's workers take uids of their own; a worker is never root)
FOR_ROOT = (Level.NAMESPACES, Level.UID_LANDLOCK, Level.UID, Level.RLIMITS)
#: what any other user tries, strongest first (the workers keep the user's uid)
FOR_USER = (Level.USERNS, Level.LANDLOCK, Level.RLIMITS)
