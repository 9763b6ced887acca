"""Waiting for a child process to end, woken by the kernel (a pidfd), not by polling in a sleep loop."""
from __future__ import annotations

import os
import select
import time
from collections.abc import Iterator

from .protocol import GONE, RUNNING, ended


def reap(pid: int, timeout: float) -> dict:
    """Wait up to ``timeout`` s for our child ``pid`` to end and reap it: how it ended, or ``RUNNING``."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        fd = None  # already reaped, or never ours
    except (AttributeError, OSError):  # no pidfd (an old kernel, not Linux): a short, bounded poll
        return _poll(pid, timeout)
    if fd is not None:
        try:
            select.select([fd], [], [], max(0.0, timeout))
        finally:
            os.close(fd)
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return GONE
    return ended(status) if done else RUNNING


def ended_children() -> Iterator[tuple[int, int]]:
    """(pid, wait status) of each child that has ended, reaped now, without waiting for any that runs."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def _poll(pid: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return GONE
        if done:
            return ended(status)
        if time.monotonic() >= deadline:
            return RUNNING
        time.sleep(0.005)
