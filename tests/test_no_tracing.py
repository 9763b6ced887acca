"""A worker refuses trace and profile functions (worker/no_tracing.py), in a process of its own as a worker is.

The control runs the same attempts without the refusal and sees each succeed, so the test can tell.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

ATTEMPTS = """
import sys
if REFUSE:
    from autograder.worker import no_tracing
    no_tracing.refuse_tracing()
def attempt(how):
    try:
        how()
    except Exception as exc:
        print("refused", type(exc).__name__, exc)
    else:
        print("allowed")
attempt(lambda: sys.settrace(lambda *a: None))
attempt(lambda: sys.setprofile(lambda *a: None))
attempt(lambda: sys.settrace(None))  # not even cleared: a tracer that ran must not hide itself
def new_code():
    f = lambda: 1
    f.__code__ = (lambda: 2).__code__
attempt(new_code)
"""


def _run(refuse: bool) -> list[str]:
    out = subprocess.run([sys.executable, "-c", f"REFUSE = {refuse}\n" + ATTEMPTS], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.splitlines()


def test_a_worker_refuses_every_way_of_setting_a_tracer_and_says_why():
    lines = _run(refuse=True)
    assert [line.split()[0] for line in lines] == ["refused"] * 4, lines
    assert "trace or profile functions" in lines[0]
    assert "code object" in lines[3]


def test_the_control_without_the_refusal_allows_each():
    assert _run(refuse=False) == ["allowed"] * 4
