"""Benchmark: how `grade autograde` scales: per-submission cost and peak memory by class size and --jobs.

Usage: python bench/scaling.py [--sizes 8,32,96,300] [--jobs 1,2] [--runs 2] [--failing 0.333] [--sample 0.5]
                               [--warmup 1] [--keep DIR]

For each class size N, writes a class with `bench/run.py --make-class DIR --n N --failing F` (a fraction F
failing public cases, spread evenly, the rest correct), then for each --jobs J times whole processes, in turn:
a bare `python -c "import torch"` (the yardstick), then `grade autograde DIR --out OUT --jobs J --force` (a
fresh OUT each run), --runs times (before the first row, --warmup uncounted pairs). Prints a Markdown table to
paste into bench/RESULTS.md, one row per (N, J):

- per submission: the batch's wall time / N (start-up included, so it falls as N grows), and the same
  over the paired `import torch` (ratio taken pair by pair, then the median);
- CPU per submission: user + system of the grader and of every process it waited for, / N;
- peak memory: the largest single process (ru_maxrss); and the largest sum over the grader's process
  tree, sampled every --sample seconds from /proc (PSS: a page shared by forked processes is split among
  them; RSS summed counts it once per process and over-states). Sampled sums can miss a process shorter than
  the interval: read them as lower bounds. ``--sample 0`` turns sampling off.

A class of 300 with --jobs 1 takes about 2-3 minutes a run on 2 cores; the whole default matrix about 25-30
minutes. Whole-process figures on a shared machine move with its load: quote the paired ratios.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: bench/ is on the path, the kit's root is not
    sys.path.insert(0, str(ROOT))

from bench.measure import Measured, measure

GRADE = [sys.executable, "-m", "autograder.cli"]
TORCH = [sys.executable, "-c", "import torch"]


def make_class(dest: Path, n: int, failing: float) -> None:
    subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--make-class", str(dest), "--n", str(n),
                    "--failing", str(failing)], check=True, cwd=ROOT)


def cell(subs: Path, work: Path, n: int, jobs: int, runs: int, sample: float | None,
         warmup: bool) -> tuple[list[Measured], list[Measured]]:
    """(the grader's runs, the paired import torch runs) for one class and --jobs."""
    out = work / f"out-{n}-{jobs}"
    grade = [*GRADE, "autograde", str(subs), "--out", str(out), "--jobs", str(jobs), "--force"]
    log = work / f"grade-{n}-{jobs}.log"
    graded, torch = [], []
    for i in range(runs + (1 if warmup else 0)):
        shutil.rmtree(out, ignore_errors=True)
        t = measure(TORCH, cwd=ROOT)
        g = measure(grade, cwd=ROOT, log=log, sample_every=sample)
        if g.returncode != 0:
            raise RuntimeError(f"grade autograde exited {g.returncode}: see {log}")
        if warmup and i == 0:
            continue
        graded.append(g)
        torch.append(t)
    return graded, torch


def row(n: int, jobs: int, graded: list[Measured], torch: list[Measured]) -> str:
    wall = statistics.median(g.wall for g in graded)
    ratios = [g.wall / n / t.wall for g, t in zip(graded, torch)]
    cpu = statistics.median(g.cpu for g in graded)
    cpu_ratios = [g.cpu / n / t.cpu for g, t in zip(graded, torch)]
    spread = f" ({min(ratios):.3f}-{max(ratios):.3f})" if len(ratios) > 1 else ""
    peak = max(g.peak_mib for g in graded)
    sums = [g for g in graded if g.sum_pss_mib is not None]
    pss = f"{max(g.sum_pss_mib for g in sums):.0f} MiB" if sums else "-"
    rss = f"{max(g.sum_rss_mib for g in sums):.0f} MiB" if sums else "-"
    return (f"| {n} | {jobs} | {wall:.1f} s | {wall / n:.3f} s | **{statistics.median(ratios):.3f}**{spread} | "
            f"{cpu / n:.3f} s ({statistics.median(cpu_ratios):.3f}x) | "
            f"{statistics.median(t.wall for t in torch):.2f} s | {peak:.0f} MiB | {pss} | {rss} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="8,32,96,300", help="class sizes, comma-separated")
    parser.add_argument("--jobs", default="1,2", help="--jobs values, comma-separated")
    parser.add_argument("--runs", type=int, default=2, help="paired runs per cell, after one warm-up")
    parser.add_argument("--failing", type=float, default=0.333, help="fraction failing public cases")
    parser.add_argument("--sample", type=float, default=0.5, help="seconds between memory samples; 0: none")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted pairs before the first row (0 or 1)")
    parser.add_argument("--keep", type=Path, default=None, help="work here and keep it (the classes, logs)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    jobs_list = [int(j) for j in args.jobs.split(",")]
    work = args.keep or Path(tempfile.mkdtemp(prefix="grade-scaling-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M")
    rows = []
    try:
        for k, n in enumerate(sizes):
            subs = work / f"class{n}"
            if not subs.exists():
                make_class(subs, n, args.failing)
            for j, jobs in enumerate(jobs_list):
                first = bool(args.warmup) and (k, j) == (0, 0)
                graded, torch = cell(subs, work, n, jobs, args.runs, args.sample or None, warmup=first)
                rows.append(row(n, jobs, graded, torch))
                print(rows[-1], file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; started {started}, load average {load:.1f} then {os.getloadavg()[0]:.1f}")
    warm = f", after {args.warmup} uncounted warm-up pair" if args.warmup else ""
    sampled = f"; memory sampled every {args.sample} s" if args.sample else ""
    print(f"classes: `bench/run.py --make-class --failing {args.failing}`; {args.runs} paired run(s) per row{warm} "
          f"(medians; ratios pair by pair){sampled}")
    print()
    print("| submissions | --jobs | batch wall | per submission | per submission / bare `import torch` (paired) "
          "| CPU per submission (/ import's CPU) | bare `import torch` | peak, largest process "
          "| peak, sum over processes (PSS, sampled) | same, RSS summed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
