"""Benchmark of ``grade autograde --executor dask``: its overhead against ``--jobs``, and a model for a big course.

Usage:
  python bench/cluster.py class DIR [--n 96]    # write a class of N generated submissions into DIR/
  python bench/cluster.py model [--tasks 40]    # measure the Dask costs and model 5,000 submissions on 50 nodes

The paired comparison (96 submissions, ``--executor dask --local-workers 2`` against ``--jobs 2``) is timed
from outside, as whole processes, with ``--force`` so that every run grades every submission (bench/RESULTS.md
gives the command). ``model`` measures, on a cluster whose workers start as a remote node's would (spawned,
not forked from the client: each imports torch, starts its zygote, loads the course, warms the reference):

- a worker's start-up until its first submission is graded (what a new Slurm job costs before it is useful);
- the cost of one submission on a warm worker, one after another (the per-task cost);
- the scheduler's own overhead per task, from no-op tasks that carry a submission-sized payload;

and prints the modelled wall time of N submissions on M nodes of W workers each:
``start-up + ceil(N / (M * W)) * per-task + N * overhead-per-task`` (the scheduler is one process: its
per-task overhead adds up; everything else runs in parallel).
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from autograder.autograde.cluster.payload import Payload
from autograder.intake.discover import discover

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "corpus" / "submissions"
SOURCES = ["correct_einsum", "bug_no_scaling", "correct_loops", "bug_mask_after_softmax_no_renorm", "stubs",
           "correct_sdpa", "bug_detach", "correct_alt_style"]  # as bench/run.py


def make_class(folder: Path, n: int) -> None:
    for i in range(n):
        shutil.copytree(CORPUS / SOURCES[i % len(SOURCES)], folder / f"student{i:03d}")


def noop(payload) -> int:
    return len(payload.files or {})


def model(tasks: int, nodes: int, submissions: int, per_node: list[int]) -> None:
    import dask
    from distributed import Client, LocalCluster, wait

    from autograder.autograde import batch
    from autograder.grading.suites.session import Grader
    from autograder.autograde.cluster.warm_grader import WarmGrader
    from autograder.autograde.cluster.tasks import grade

    work = Path(tempfile.mkdtemp(prefix="grade-bench-cluster-"))
    try:
        make_class(work / "subs", tasks + 1)
        grader = Grader(ROOT / "course.yml")
        grader_hash = grader.identity
        sources, _ = discover([work / "subs"], grader.course.modules)
        (work / "staging").mkdir()
        jobs, _ = batch.prepare(sources, work / "staging", grader.course.modules, work / "out", grader_hash, True,
                                None, grader.course.steps_by_module())
        payloads = [Payload.pack(job) for job in jobs]
        config = {"distributed.worker.profile.enabled": False, "temporary-directory": str(work)}
        with dask.config.set(config), LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                                   dashboard_address=None, host="127.0.0.1") as cluster, \
                Client(cluster) as client:
            start = time.perf_counter()
            client.register_plugin(WarmGrader(str(grader.course_file), grader_hash))
            client.submit(grade, payloads[0], pure=False).result()
            startup = time.perf_counter() - start  # spawned worker: torch, zygote, course, warm reference, 1 grading
            start = time.perf_counter()
            wait([client.submit(grade, p, pure=False) for p in payloads[1:]])
            per_task = (time.perf_counter() - start) / tasks
            overheads = []
            for _ in range(3):
                many = [payloads[i % len(payloads)] for i in range(1000)]
                start = time.perf_counter()
                wait(client.map(noop, many, pure=False))
                overheads.append((time.perf_counter() - start) / len(many))
            overhead = statistics.median(overheads)
        one = startup - per_task
        print(f"machine: {os.cpu_count()} cores; one worker spawned as on a remote node; {tasks} submissions after "
              "the first")
        print("| figure | seconds |")
        print("| --- | --- |")
        print(f"| worker start-up until ready (spawned: torch, zygote, course, reference answers) | {one:.2f} |")
        print(f"| one submission on a warm worker (per-task cost) | {per_task:.3f} |")
        print("| Dask's own cost per task (no-op task with a submission's payload, scheduler and transfer) | "
              f"{overhead * 1000:.2f} ms |")
        print()
        print(f"| model: {submissions} submissions on {nodes} nodes | workers | wall (s) |")
        print("| --- | --- | --- |")
        for w in per_node:
            workers = nodes * w
            wall = one + math.ceil(submissions / workers) * per_task + submissions * overhead
            print(f"| {w} workers per node | {workers} | {wall:.0f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    make = sub.add_parser("class")
    make.add_argument("folder", type=Path)
    make.add_argument("--n", type=int, default=96)
    mod = sub.add_parser("model")
    mod.add_argument("--tasks", type=int, default=40)
    mod.add_argument("--nodes", type=int, default=50)
    mod.add_argument("--submissions", type=int, default=5000)
    args = parser.parse_args()
    if args.what == "class":
        make_class(args.folder, args.n)
    else:
        model(args.tasks, args.nodes, args.submissions, [2, 8, 32])


if __name__ == "__main__":
    main()
