"""Whole-process measurement for the bench scripts: wall, CPU and peak memory of one command, start-up included.

``measure(cmd)`` starts the command in a session of its own, waits for it with ``os.wait4`` and returns:

- ``wall``: a monotonic clock read just before the start and just after the child is reaped;
- ``cpu``: user + system seconds of the command and of every descendant it waited for (the kernel's own
  accounting of the reaped child, as ``/usr/bin/time`` reports it); a process that was not waited for
  (an orphan re-parented to init) is not counted;
- ``peak_mib``: ``ru_maxrss``, the largest resident set of any *single* process among those: not their sum;
- with ``sample_every`` (seconds), also the largest *sum* over the command's process tree (found by walking
  ``/proc/*/stat`` parent links from the command), sampled at that interval: ``sum_rss_mib`` (the sum of the
  processes' resident sets, which counts a page shared by forked processes once per process, so it
  over-states) and ``sum_pss_mib`` (proportional set size from ``/proc/PID/smaps_rollup``: a shared page is
  split among its sharers, so the sum is what the tree holds). A process that lives shorter than the
  interval can be missed, so both are lower bounds of the true peak of the sum; sampling costs a little CPU
  (about 10-15 ms per sample on a 2-core VM running ~100 processes, most of it the walk of /proc: 2-3% of
  a core at 0.5 s), charged to this process, not to the command, but taken from the same cores.

Whatever the command leaves running in its session is killed when it exits (and said in ``leftover``).
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


@dataclass
class Measured:
    wall: float
    cpu: float
    peak_mib: float           # the largest single process (ru_maxrss)
    returncode: int
    sum_rss_mib: float | None = None   # the largest sampled sum of resident sets over the process tree
    sum_pss_mib: float | None = None   # the same with proportional set sizes (shared pages split)
    samples: int = 0
    leftover: int = 0         # processes of the command's session still running when it exited, then killed


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses; the last ")" ends it
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _tree(root: int) -> list[int]:
    children, found, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _memory(pids: list[int]) -> tuple[int, int]:
    """(sum of RSS, sum of PSS) of ``pids`` in KiB; a process that has gone counts 0."""
    rss = pss = 0
    for pid in pids:
        try:
            rss += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KIB
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
                    break
        except (OSError, ValueError, IndexError):
            continue
    return rss, pss


def _session_left(sid: int) -> list[int]:
    left = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == sid:
                    left.append(int(entry.name))
            except OSError:
                continue
    return left


def measure(cmd: list[str], cwd: Path | None = None, env: dict | None = None, log: Path | None = None,
            sample_every: float | None = None, timeout: float | None = None) -> Measured:
    """Run ``cmd`` once (output appended to ``log``, else thrown away) and measure it; see the module docstring."""
    out = open(log, "ab") if log else open(os.devnull, "wb")  # noqa: SIM115 - closed in the finally below, after the command
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        best = {"rss": 0, "pss": 0, "n": 0}
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(sample_every):
                rss, pss = _memory(_tree(proc.pid))
                best["rss"], best["pss"], best["n"] = max(best["rss"], rss), max(best["pss"], pss), best["n"] + 1

        sampler = threading.Thread(target=sample, daemon=True) if sample_every else None
        if sampler:
            sampler.start()
        timer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL)) if timeout else None
        if timer:
            timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if timer:
            timer.cancel()
        stop.set()
        if sampler:
            sampler.join()
        left = _session_left(proc.pid)
        if left:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
    finally:
        out.close()
    got = Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode, leftover=len(left))
    if sample_every:
        got.sum_rss_mib, got.sum_pss_mib, got.samples = best["rss"] / 1024, best["pss"] / 1024, best["n"]
    return got
