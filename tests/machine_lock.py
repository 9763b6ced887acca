"""One machine-wide lock for the tests that use fixed paths or machine-wide state (marker files in /tmp,
/run/lock, fixed uids, the machine's System V IPC objects): a second test suite running beside this one (CI
beside a developer's run) takes its turn instead of seeing, or removing, what this one made."""
from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path

LOCK = Path("/tmp/.attention-kit-tests.lock")


@contextlib.contextmanager
def machine_to_ourselves():
    with open(LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
