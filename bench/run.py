"""Benchmark: seconds per graded submission and per `grade check`, against a bare `import torch`.

Usage: python bench/run.py [--n 96] [--repeat 3] [--jobs N] [--failing 0.333]
       python bench/run.py --make-class DIR [--n 96] [--failing 0.333]   # only write the class, for paired timing

Generates N submissions (default 96, a class; copies of the corpus's correct, buggy and stub samples), grades
them with `grade autograde --jobs N` (default: the number of cores) with full isolation, and times, in the
same run: a bare `python -c "import torch"` (the floor a process-per-submission design pays), `grade check` on
the full unit and on one step (`--step`), each as a session's first check (no server yet: it loads torch itself,
then leaves the server), cold (`GRADE_CHECK_SERVER=0`: no server, ever) and warm (answered by the server the
first check left: ``autograder/check/warm_server.py``), and their ratios.
The batches read the reference's answers that one untimed submission graded first kept (stored_answers.py), in a
folder of the run's own, as an instructor's batches read what their first run, or `grade nbgrader`, kept.
Each repeat times them back to back; figures are medians of --repeat runs, ratios the median of each repeat's
own ratio (the machine's speed drifts between repeats). Prints a Markdown block to paste into
bench/RESULTS.md, with the isolation level the grader reported.

``--failing F``: a class where a fraction F of the students hand in a bug that fails public cases (so their
feedback pages get pictures) and the rest a correct solution; ``--failing 0`` is the same class all correct."""
from __future__ import annotations

import argparse
import importlib.util
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
CORPUS = ROOT / "tests" / "corpus" / "submissions"
SOURCES = ["correct_einsum", "bug_no_scaling", "correct_loops", "bug_mask_after_softmax_no_renorm", "stubs",
           "correct_sdpa", "bug_detach", "correct_alt_style"]
CORRECT = ["correct_einsum", "correct_loops", "correct_sdpa", "correct_alt_style"]
FAILING = ["bug_no_scaling", "bug_mask_after_softmax_no_renorm", "bug_softmax_dim0", "bug_context_transposed"]


def make_class(subs: Path, n: int, failing: float | None) -> None:
    """``n`` submissions: the SOURCES mix, or (``failing``) that fraction failing public cases, the rest correct."""
    for i in range(n):
        if failing is None:
            source = SOURCES[i % len(SOURCES)]
        elif int((i + 1) * failing) > int(i * failing):  # spread evenly through the class
            source = FAILING[i % len(FAILING)]
        else:
            source = CORRECT[i % len(CORRECT)]
        shutil.copytree(CORPUS / source, subs / f"student{i:03d}")


def timed(cmd: list[str], cwd: Path = ROOT, env: dict | None = None) -> float:
    """Wall seconds of ``cmd``, run as a user runs it: with bytecode caching on (an environment that turns it
    off, PYTHONDONTWRITEBYTECODE, makes every start compile the kit's modules again; the first, untimed runs
    write the caches)."""
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **(env or {})})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=96)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--failing", type=float, default=None, help="fraction failing public cases, the rest correct")
    parser.add_argument("--make-class", type=Path, default=None, help="only write the class into this folder")
    args = parser.parse_args()
    if args.make_class:
        make_class(args.make_class, args.n, args.failing)
        return
    work = Path(tempfile.mkdtemp(prefix="grade-bench-"))
    subs = work / "submissions"
    make_class(subs, args.n, args.failing)
    # `grade` as a user types it: the console script installed beside this interpreter, if it runs this checkout's kit
    # (one installed from another checkout would time that one's). `python -m autograder.cli` measured 0.05 s slower
    # on a cold `grade check --step`, paired, with the same exit.
    script = Path(sys.executable).with_name("grade.exe" if os.name == "nt" else "grade")
    spec = importlib.util.find_spec("autograder")
    ours = spec is not None and spec.origin is not None and Path(spec.origin).resolve().parent.parent == ROOT
    grade = [str(script)] if script.is_file() and ours else [sys.executable, "-m", "autograder.cli"]
    server_dir = Path(tempfile.mkdtemp(prefix="gcs-bench-", dir="/tmp" if os.name == "posix" else None))
    cold_env = {"GRADE_CHECK_SERVER": "0"}
    warm_env = {"GRADE_CHECK_SERVER": "1", "GRADE_CHECK_SERVER_DIR": str(server_dir)}
    full = [*grade, "check", str(CORPUS / "correct_einsum")]
    step = [*full, "--step", "simple_attention"]
    timed(full, env=warm_env)  # the first check: in-process, and it leaves the server the warm rows use
    # One submission first, untimed: it says the isolation level, and keeps the reference's answers
    # (stored_answers.py) in a folder of this run's own, which every timed batch reads, as an instructor's batches
    # read what their first kept
    os.environ["GRADE_CACHE_DIR"] = str(work / "grade-cache")
    said = subprocess.run([*grade, "autograde", str(subs / "student000"), "--out", str(work / "iso"), "--jobs", "1"],
                          cwd=ROOT, capture_output=True, text=True).stdout.splitlines()
    isolation = next((line for line in said if line.startswith("isolation:")), "isolation: (not reported)")
    torch_import, batch = [], []
    checks: dict[str, list[float]] = {"first": [], "first step": [], "cold": [], "cold step": [], "warm": [],
                                      "warm step": []}

    def first(cmd: list[str]) -> float:  # a session's first check (no server yet): it leaves one, ended here
        fresh = Path(tempfile.mkdtemp(prefix="gcs-first-", dir="/tmp" if os.name == "posix" else None))
        try:
            return timed(cmd, env={"GRADE_CHECK_SERVER": "1", "GRADE_CHECK_SERVER_DIR": str(fresh)})
        finally:
            shutil.rmtree(fresh, ignore_errors=True)

    for _ in range(args.repeat):
        torch_import.append(timed([sys.executable, "-c", "import torch"]))
        out = work / f"out{len(batch)}"
        batch.append(timed([*grade, "autograde", str(subs), "--out", str(out), "--jobs", str(args.jobs)]) / args.n)
        checks["first"].append(first(full))
        checks["first step"].append(first(step))
        checks["cold"].append(timed(full, env=cold_env))
        checks["cold step"].append(timed(step, env=cold_env))
        checks["warm"].append(timed(full, env=warm_env))
        checks["warm step"].append(timed(step, env=warm_env))
    shutil.rmtree(server_dir, ignore_errors=True)  # the server sees its socket gone, and ends
    t, b = (statistics.median(x) for x in (torch_import, batch))
    rb = statistics.median(x / y for x, y in zip(batch, torch_import))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}")
    mix = "the corpus mix" if args.failing is None else f"{args.failing:.0%} failing public cases, the rest correct"
    print(f"submissions: {args.n} ({mix}); jobs: {args.jobs}; runs: {args.repeat} (medians; ratios paired run by run)")
    print(isolation)
    print("| figure | seconds | ratio to bare import torch |")
    print("| --- | --- | --- |")
    print(f"| bare `python -c 'import torch'` | {t:.2f} | 1.00 |")
    print(f"| `grade autograde --jobs {args.jobs}`, per submission (batch of {args.n}, start-up included) "
          f"| {b:.2f} | {rb:.2f} |")
    for name, what in (("first", "`grade check` on the full unit, a session's first (it leaves the server)"),
                       ("first step", "`grade check --step simple_attention`, a session's first"),
                       ("cold", "`grade check` on the full unit, cold (`GRADE_CHECK_SERVER=0`)"),
                       ("cold step", "`grade check --step simple_attention`, cold"),
                       ("warm", "`grade check` on the full unit, warm (the server the first check left)"),
                       ("warm step", "`grade check --step simple_attention`, warm")):
        ratio = statistics.median(x / y for x, y in zip(checks[name], torch_import))
        print(f"| {what} | {statistics.median(checks[name]):.2f} | {ratio:.2f} |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
