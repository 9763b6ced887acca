"""A worker's limits as rlimits, and the words that name a limit.

The operating system reports a limit as an ordinary exception in the code that hit it: ``OSError`` [Errno
27] "File too large" past the output limit (RLIMIT_FSIZE: Python ignores SIGXFSZ), ``MemoryError`` (or
torch's "can't allocate memory") past the memory limit (RLIMIT_AS), ``BlockingIOError`` from fork past the
process limit (RLIMIT_NPROC). The trusted side names them in these words for the student
(``grading/runner.py: limit_hint``), from the course's own limits; the time limit and a worker killed for a limit it
names from what it saw itself (``sandbox/host.py``).
"""
from __future__ import annotations

import sys

try:
    import resource
except ImportError:  # Windows: no rlimits, and no limit to name
    resource = None

_MB = 2**20


def mapped_bytes() -> int:
    """This process's address space now (VmSize), 0 where /proc cannot say (macOS, which ignores RLIMIT_AS)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def address_space_limit(memory_mb: float | None) -> int | None:
    """RLIMIT_AS for a memory budget of ``memory_mb``: what is mapped already (torch's libraries: some 0.6 GB
    for its CPU build, over 3 GB for a CUDA build) plus the budget. A student's code gets the same memory
    whichever torch build the machine has installed."""
    if not memory_mb:
        return None
    return mapped_bytes() + int(memory_mb * _MB)


#: how a limit is named
NAMES = {"output": "output limit", "memory": "memory limit", "processes": "process limit", "time": "time limit"}


def sentence(limit: str, value: str) -> str:
    what = {"output": "printed or wrote more than the output limit allows",
            "memory": "asked for more memory than the memory limit allows",
            "processes": "started more processes or threads than the process limit allows"}[limit]
    return f"the {NAMES[limit]}{value} was hit: your code {what}"


#: the limits grade check applies in its own workers, each by the rlimit that carries it (time and submission
#: time are kept by the trusted side, everywhere)
RLIMIT_OF = {"memory": "RLIMIT_AS", "output": "RLIMIT_FSIZE"}
_VALUES = {"memory": ("memory_mb", "MB"), "output": ("output_mb", "MB")}


def not_applicable(limits: dict, platform: str | None = None) -> list[tuple[str, str]]:
    """``(limit, why)`` for each of ``limits`` (as recorded: memory_mb, output_mb...) that ``grade check``
    cannot apply on this machine: no rlimits at all (Windows), no such rlimit, or one the system does not
    enforce (macOS ignores RLIMIT_AS)."""
    platform = sys.platform if platform is None else platform
    out = []
    for limit, rlimit in RLIMIT_OF.items():
        if not limits.get(_VALUES[limit][0]):
            continue
        if resource is None:
            out.append((limit, "this system has no resource limits, as on Windows"))
        elif not hasattr(resource, rlimit):
            out.append((limit, f"this system has no {rlimit}"))
        elif limit == "memory" and platform == "darwin":
            out.append((limit, "macOS does not enforce RLIMIT_AS, an address-space limit"))
    return out


def not_applied_sentence(limits: dict, platform: str | None = None) -> str:
    """One sentence naming the limits ``grade check`` could not apply here, in autograde's words; "" if none."""
    missing = not_applicable(limits, platform)
    if not missing:
        return ""
    by_why: dict[str, list[str]] = {}  # one reason said once for the limits it explains
    for limit, why in missing:
        key, unit = _VALUES[limit]
        by_why.setdefault(why, []).append(f"the {NAMES[limit]} of {limits[key]:,} {unit}")
    named = [f"{' and '.join(limits_)} ({why})" for why, limits_ in by_why.items()]
    them = "it" if len(missing) == 1 else "them"
    return (f"not applied by grade check on this machine: {' and '.join(named)}; grade autograde applies "
            f"{them}, so code that passes here can still hit {them} there.")
