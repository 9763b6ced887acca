"""Benchmark: the memory the kit keeps per student on a shared machine (a JupyterHub node, a lab server).

Usage: python bench/memory_per_student.py [--students 1,30] [--notebooks 1] [--keep DIR]

For each count N of --students, side by side on this machine: N students, each with a warm-server folder of
their own (``GRADE_CHECK_SERVER_DIR``, as each user's own runtime folder), each running one terminal ``grade check``
of samples/submissions/alice (which leaves the student's warm server), then --notebooks notebook checks of the same
code as a kernel's ``%grade check`` asks them (``check/magic.py: checked``, from a process standing in for the kernel:
the kernel is the student's own process, and imports none of the checking code). Then, with every check done,
the kit's processes left per student are found (those started with the student's folder in their environment) and
their PSS read from ``/proc/PID/smaps_rollup`` (PSS splits a page shared by several processes among them: the
library pages every student's server maps from the same files are counted once in the sum). Prints a Markdown table
to paste into bench/RESULTS.md: processes per student, PSS per student (mean, largest), the sum, and the sum
extrapolated linearly to 100 students (an upper bound: sharing grows with N). The servers are ended after.

On 2 cores, 30 students take about 5 minutes (each server loads torch once).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALICE = ROOT / "samples" / "submissions" / "alice"
MODULES = ("simple_attention", "trainable_attention", "causal_attention", "multihead_attention")
NOTEBOOK_CHECK = ("import json, sys\n"
                  "from autograder.check import magic\n"
                  "answer = magic.checked(json.loads(sys.stdin.read()))\n"
                  "sys.exit(0 if answer.get('passed') else 1)\n")


def _env(folder: Path) -> dict:
    return {**os.environ, "GRADE_CHECK_SERVER": "1", "GRADE_CHECK_SERVER_DIR": str(folder),
            "PYTHONPATH": str(ROOT)}


def one_student(folder: Path, notebooks: int) -> None:
    """A terminal check, then ``notebooks`` notebook checks; each must pass (alice's code is correct)."""
    env = _env(folder)
    done = subprocess.run([sys.executable, "-m", "autograder.cli", "check", str(ALICE)], env=env, cwd=folder,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"grade check failed: {done.stdout[-1000:]}{done.stderr[-1000:]}")
    cells = [(ALICE / f"{m}.py").read_text() for m in MODULES]
    request = json.dumps({"cells": cells, "steps": [], "said": "checked", "notebook": None, "html": None})
    for _ in range(notebooks):
        done = subprocess.run([sys.executable, "-c", NOTEBOOK_CHECK], input=request, env=env, cwd=folder,
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise SystemExit(f"%grade check failed: {done.stdout[-1000:]}{done.stderr[-1000:]}")


def kit_processes(folder: Path) -> list[int]:
    """The processes started with ``folder`` as their warm-server folder (a fork keeps the environment)."""
    marker = f"GRADE_CHECK_SERVER_DIR={folder}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                if marker in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found.append(int(entry))
    return found


def pss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(students: int, notebooks: int, base: Path) -> dict:
    folders = [Path(tempfile.mkdtemp(prefix=f"mps{n}-", dir=base)) for n in range(students)]
    started = time.monotonic()
    try:
        for folder in folders:
            one_student(folder, notebooks)
        time.sleep(1)  # the last check's child has been reaped by its server
        per_student = [[(pid, pss_mib(pid)) for pid in kit_processes(f)] for f in folders]
        return {"students": students, "notebooks": notebooks, "seconds": time.monotonic() - started,
                "processes": [len(p) for p in per_student],
                "pss": [sum(m for _, m in p) for p in per_student]}
    finally:
        for folder in folders:
            for pid in kit_processes(folder):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
            shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", default="1,30")
    parser.add_argument("--notebooks", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="the folder for the students' server folders (default: /tmp)")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    print(f"{time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()},"
          f" load {os.getloadavg()[0]:.1f}")
    print("| students | notebook checks each | kit processes per student | PSS per student, mean (MiB) | "
          "largest (MiB) | sum (MiB) | 100 students, linear (GiB) |")
    print("|---|---|---|---|---|---|---|")
    for count in (int(n) for n in args.students.split(",")):
        found = measure(count, args.notebooks, base)
        mean = statistics.mean(found["pss"])
        print(f"| {count} | {args.notebooks} | {max(found['processes'])} | {mean:.0f} | {max(found['pss']):.0f} | "
              f"{sum(found['pss']):.0f} | {mean * 100 / 1024:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
