"""The isolation levels: how a zygote's workers are confined, one name shared by both sides of the boundary.

Weakest first: ``rlimits`` < ``uid+rlimits`` < ``namespaces`` (docs/isolation.md). The zygote finds what
the machine allows (``confine.plan_for_zygote``) and says it on its control channel; the trusted side reads
it back (``sandbox/zygote.py``) and decides whether to grade at it (``autograde/run_policy.py``). A
``str`` enum: on the wire, in results.json and in every sentence a level is its plain text.
"""
from __future__ import annotations

import enum


class Level(str, enum.Enum):
    RLIMITS = "rlimits"
    UID = "uid+rlimits"
    NAMESPACES = "namespaces"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def at_least(self, other: Level) -> bool:
        """Is this level as strong as ``other`` or stronger?"""
        return ORDER.index(self) >= ORDER.index(Level(other))


#: weakest first
ORDER = tuple(Level)
#: the names, as the command line and AUTOGRADER_ISOLATION take them, strongest first
NAMES = tuple(level.value for level in reversed(ORDER))
