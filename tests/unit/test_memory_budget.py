"""The memory limit is a budget for the student's code, whichever torch build the machine has.

torch's CPU build maps some 0.6 GB of address space when imported; a CUDA build (what ``pip install torch``
gives on Linux without the CPU index, as on a Python the CPU wheel does not cover) maps over 3 GB, more than
the course's ``memory_mb`` of 3072. An RLIMIT_AS of ``memory_mb`` alone left such a worker no room to read
its first request: every step "ended the worker process". The limit is what is mapped plus the budget.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS: Linux")]

#: a process that has mapped 2.5 GB it does not use (as CUDA's libraries), then is limited to a budget of 512 MB
_PROBE = textwrap.dedent("""
    import mmap, resource, sys
    from autograder.worker import limits
    libraries = mmap.mmap(-1, 2560 * 2**20, prot=mmap.PROT_READ)
    limit = limits.address_space_limit(512) if sys.argv[1] == "budget" else 512 * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    def fits(mb):
        try:
            block = bytearray(mb * 2**20)
            return True
        except MemoryError:
            return False
    print(fits(256), fits(1024))
""")


def _probe(kind: str) -> str:
    run = subprocess.run([sys.executable, "-c", _PROBE, kind], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip()


def test_the_budget_is_on_top_of_what_is_mapped():
    assert _probe("budget") == "True False"


def test_control_an_absolute_address_space_limit_leaves_no_room_after_large_libraries():
    fits_256, _fits_1024 = _probe("absolute").split(" ", 1)
    assert fits_256 == "False"
