"""How long ``grade lti push`` takes for a class (96 by default) against the loopback LTI platform of the tests.

    python bench/lti_push.py [--n 96] [--repeat 3]

Each repeat starts a fresh tool store and platform, launches the tool once as the instructor, then times three whole
``grade lti push`` processes (the command a user types, interpreter start-up included): the first push (NRPS, the
line item created, N scores posted), a re-run (nothing posted) and a regrade of two scores. Prints the summary and
the platform's gradebook of the last repeat.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.lti_fixture import COURSE_YML, class_members, start, stop, write_results


def names(n: int) -> list[str]:
    return [f"student{i:03d}" for i in range(1, n + 1)]


def push(lms) -> tuple[float, subprocess.CompletedProcess]:
    began = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "autograder.cli", "lti", "push", str(lms.tmp / "results"), "--course",
                          "ATT101", "--store", str(lms.store_dir), "--course-yml", str(lms.tmp / "course.yml")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - began
    if run.returncode != 0:
        raise SystemExit(run.stderr)
    return took, run


def one(n: int) -> tuple[list[float], str, dict]:
    with tempfile.TemporaryDirectory(prefix="lti-bench-") as tmp:
        tmp = Path(tmp)
        people = names(n)
        lms = start(tmp, class_members(people))
        try:
            (tmp / "course.yml").write_text(COURSE_YML)
            write_results(tmp / "results", {p: (i % 11 * 0.9, "2025-03-14T20:00:00+01:00")
                                            for i, p in enumerate(people)})
            assert lms.launch("u-teacher").status_code == 200
            first, run1 = push(lms)
            again, run2 = push(lms)
            write_results(tmp / "results", {people[0]: (9.5, None), people[1]: (3.25, None)})
            regrade, run3 = push(lms)
            (item,) = lms.platform.book.lineitems.values()
            book = {"line item": item, "scores posted": len(lms.platform.book.scores()),
                    "column": lms.platform.book.column(item["id"])}
            return [first, again, regrade], "\n".join(r.stderr.strip() for r in (run1, run2, run3)), book
        finally:
            stop(lms)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=96)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times = []
    for _ in range(args.repeat):
        took, summary, book = one(args.n)
        times.append(took)
        print(f"first push {took[0]:.2f} s, re-run {took[1]:.2f} s, regrade of two {took[2]:.2f} s", flush=True)
    for label, i in (("first push", 0), ("re-run", 1), ("regrade", 2)):
        print(f"median {label} of {args.n}: {statistics.median(t[i] for t in times):.2f} s")
    print("\nthe summaries of the last repeat:\n" + summary)
    column = book["column"]
    print(f"\nthe platform's gradebook: line item {book['line item']}, {book['scores posted']} score posts, "
          f"{len(column)} results; first five: {dict(list(column.items())[:5])}")


if __name__ == "__main__":
    main()
