"""Time ``grade similarity`` on a generated class (300 by default): target under 60 s on 2 cores.

    python bench/similarity.py [--n 300] [--keep DIR]

The class is made from the similarity corpus (tests/corpus/similarity/submissions): each student takes
each module from one of the 15 corpus submissions at random, with the local names renamed and comments
of their own, so that every step is written alike by about a tenth of the class, the worst case for the
pruning (many pairs share fingerprints). Every pair is in scope; it prints the time, the pairs, the pairs
that shared a fingerprint and were scored, and the top pairs.
"""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "corpus" / "similarity")]

from make_corpus import MODULES, recomment, rename

from autograder.similarity.compare_class import compare_class

NAMES = ["scores", "weights", "context", "q", "k", "v", "x_i", "rows", "total", "exps", "mask", "masked", "T", "n",
         "keys", "queries", "values", "attn_scores", "attn_weights", "context_vec", "b", "num_tokens"]


def make_class(dest: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    sources = sorted(p for p in (ROOT / "tests" / "corpus" / "similarity" / "submissions").iterdir() if p.is_dir())
    for i in range(n):
        folder = dest / f"student{i:03d}"
        folder.mkdir(parents=True)
        mapping = {name: f"{name}_{rng.randrange(1000)}" for name in rng.sample(NAMES, 8)}
        for module in MODULES:
            text = (rng.choice(sources) / f"{module}.py").read_text()
            (folder / f"{module}.py").write_text(recomment(rename(text, mapping), f"s{i}"))


def run(n: int, keep: Path | None) -> float:
    work = Path(tempfile.mkdtemp(prefix="bench-similarity-"))
    try:
        make_class(work / "class", n)
        start, cpu = time.monotonic(), time.process_time()
        done = compare_class([work / "class"], keep or work / "out", course_file=ROOT / "course.yml")
        seconds, cpu = time.monotonic() - start, time.process_time() - cpu
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{done.submissions} submissions, {done.compared} pairs, {done.candidates} scored (shared a fingerprint): "
          f"{seconds:.1f} s wall, {cpu:.1f} s cpu")
    return seconds


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    run(args.n, args.keep)
