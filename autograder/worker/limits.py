"""A limit the student's code ran into and raised about, named as the limit it is, with its value.

The operating system reports a limit as an ordinary exception in the code that hit it: ``OSError`` [Errno
27] "File too large" past the output limit (RLIMIT_FSIZE: Python ignores SIGXFSZ), ``MemoryError`` (or
torch's "can't allocate memory") past the memory limit (RLIMIT_AS), ``BlockingIOError`` from fork past the
process limit (RLIMIT_NPROC). Read here, in the worker, where the limit's value is known; the trusted side
names the time limit and a worker killed for a limit (``grading/workers.py``).
"""
from __future__ import annotations

import errno

try:
    import resource
except ImportError:  # Windows: no rlimits, and no limit to name
    resource = None

_MB = 2**20


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
