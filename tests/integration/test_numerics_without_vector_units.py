"""The tests whose numbers depend on the CPU's vector units (``-m numerics``), again as on a CPU without them.

torch picks its kernels (AVX2, AVX-512, or none) when it starts, and a reduction summed in another order rounds
differently: a classroom machine without AVX2 must get the same verdicts as this one. ``ATEN_CPU_CAPABILITY=default``
makes torch start as on such a CPU; it is read once, at start-up, so the numerics tests run again in a pytest of their
own (one process, 5 to 16 CPU-s), inside the suite's run: its cores are not left waiting for it at the end.

The control is the numerics tests themselves: each compares against recorded numbers within the course tolerance and
fails past it, whatever the CPU (``tests/unit/test_documents.py::test_printed_value``, the committed public cases,
a correct submission's public checks).
"""
from __future__ import annotations

import os
import subprocess
import sys

from .conftest import ROOT

#: the child: which kernels torch chose, then the numerics tests, in one process
CHILD = """
import sys, torch, pytest
print("kernels:", torch.backends.cpu.get_cpu_capability(), flush=True)
sys.exit(pytest.main(["-m", "numerics", "-p", "no:cacheprovider", "-q", "--no-header"]))
"""


def test_the_numerics_tests_pass_as_on_a_cpu_without_vector_units():
    # a run of its own, not a step of this one: its own reference answers (GRADE_CACHE_DIR: this run's were computed
    # with the vector units), no CPU_TIME_FILE lines of its own
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "CPU_TIME_FILE", "GRADE_CACHE_DIR"))}
    env["ATEN_CPU_CAPABILITY"] = "default"
    run = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert run.stdout.startswith("kernels: DEFAULT\n"), run.stdout[:300]  # what torch chose: no vector units
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]  # exit 5 (nothing selected) fails too
