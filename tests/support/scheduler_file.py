"""Where a ``dask scheduler`` started with ``--port 0`` listens: the address it writes to its ``--scheduler-file``.

A port picked by the test (bind port 0, close, pass the number on) is free when picked, not when the scheduler binds
it seconds later, after its imports: on a busy machine another process can take it in between. With ``--port 0`` the
scheduler binds a port of its own choosing and writes where in the scheduler file, which the test reads.
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path


def address(path: Path, scheduler: subprocess.Popen, log: Path, bound: float = 120) -> str:
    """The address in ``path`` once ``scheduler`` has written it (within ``bound`` seconds); the scheduler's log
    if it ends first."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        assert scheduler.poll() is None, log.read_text(errors="replace")
        try:
            return json.loads(path.read_text(encoding="utf-8"))["address"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):  # not yet written, or half-written
            time.sleep(0.1)
    raise AssertionError(f"no address in {path} after {bound:.0f} s: " + log.read_text(errors="replace")[-3000:])
