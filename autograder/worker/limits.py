"""A limit the student's code ran into and raised about, named as the limit it is, with its value.

The operating system reports a limit as an ordinary exception in the code that hit it: ``OSError`` [Errno
27] "File too large" past the output limit (RLIMIT_FSIZE: Python ignores SIGXFSZ), ``MemoryError`` (or
torch's "can't allocate memory") past the memory limit (RLIMIT_AS), ``BlockingIOError`` from fork past the
process limit (RLIMIT_NPROC). Read here, in the worker, where the limit's value is known; the trusted side
names the time limit and a worker killed for a limit (``sandbox/host.py``).
"""
from __future__ import annotations

import errno
import sys

try:
    import resource
except ImportError:  # Windows: no rlimits, and no limit to name
    resource = None

_MB = 2**20
#: the address space this worker had mapped when its memory limit was set (``address_space_limit``)
_mapped_at_limit = 0


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
    global _mapped_at_limit  # noqa: PLW0603 - the bytes mapped when RLIMIT_AS was set: the limit's message leaves them out
    if not memory_mb:
        return None
    _mapped_at_limit = mapped_bytes()
    return _mapped_at_limit + int(memory_mb * _MB)


def _soft(name: str) -> int | None:
    """The soft value of rlimit ``name`` (RLIMIT_FSIZE...), None when unlimited or unknown."""
    if resource is None or not hasattr(resource, name):
        return None
    try:
        soft = resource.getrlimit(getattr(resource, name))[0]
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def _value(name: str, unit: str) -> str:
    soft = _soft(name)
    if soft is None:
        return ""
    if name == "RLIMIT_AS":  # the budget, not the libraries mapped before it was set
        soft -= _mapped_at_limit
    return f" of {soft // _MB:,} MB" if unit == "MB" else f" of {soft:,} {unit}"


#: how a limit is named
NAMES = {"output": "output limit", "memory": "memory limit", "processes": "process limit", "time": "time limit"}


def sentence(limit: str, value: str) -> str:
    what = {"output": "printed or wrote more than the output limit allows",
            "memory": "asked for more memory than the memory limit allows",
            "processes": "started more processes or threads than the process limit allows"}[limit]
    return f"the {NAMES[limit]}{value} was hit: your code {what}"


def hit(exc: BaseException) -> dict | None:
    """``{"type": "LimitExceeded", "limit", "message"}`` when ``exc`` is a limit's, else None."""
    try:
        code = getattr(exc, "errno", None) if isinstance(exc, OSError) else None
        text = str(exc) if isinstance(exc, (MemoryError, RuntimeError)) else ""
    except BaseException:  # noqa: BLE001 - a hostile errno or __str__: not a limit's
        return None
    if code == errno.EFBIG:
        limit, value = "output", _value("RLIMIT_FSIZE", "MB")
    elif isinstance(exc, MemoryError) or "can't allocate memory" in text:
        limit, value = "memory", _value("RLIMIT_AS", "MB")
    elif isinstance(exc, BlockingIOError) and code == errno.EAGAIN:
        limit, value = "processes", _value("RLIMIT_NPROC", "processes")
    else:
        return None
    return {"type": "LimitExceeded", "limit": limit, "message": sentence(limit, value)}


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
