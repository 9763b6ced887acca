"""A worker refuses trace and profile functions (``autograder/worker/no_tracing.py``), and its own checks raise no
audit event per object they look at, so the hook costs nothing while nothing is refused."""
from __future__ import annotations

import subprocess
import sys
import types

import pytest

from autograder.worker import hygiene, integrity

from .conftest import ROOT

pytestmark = pytest.mark.unit

TRIES = """
import sys, threading, collections
def g(x=1, *, y=2):
    return x, y
{install}
refused = []
for name, call in (("settrace", lambda: sys.settrace(lambda *a: None)), ("setprofile", lambda: sys.setprofile(lambda *a: None))):
    try:
        call()
    except RuntimeError as exc:
        refused.append((name, str(exc)))
    finally:
        sys.settrace(None) if not refused else None
def f():
    pass
try:
    f.__code__ = (lambda: 1).__code__
except RuntimeError:
    refused.append(("__code__", ""))
for name, value in (("__defaults__", (5,)), ("__kwdefaults__", {{"y": 5}})):
    try:
        setattr(g, name, value)
    except RuntimeError:
        refused.append((name, ""))
Point = collections.namedtuple("Point", "x y", defaults=(0,))  # sets a new function's __defaults__: not ours
print(refused, g(), Point(1))
"""


def tried(install: bool) -> str:
    code = TRIES.format(install="from autograder.worker import no_tracing; no_tracing.install((g,))" if install else "")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_after_install_tracing_profiling_and_new_code_are_refused_with_the_reason():
    out = tried(install=True)
    assert "('settrace', 'sys.settrace is not allowed while your code is graded" in out
    assert "('setprofile', 'sys.setprofile is not allowed" in out and "('__code__', '')" in out
    # the defaults of the functions kept (the worker's own: its way out binds its callables to them, seal.py) cannot
    # be swapped either; any other function's can (collections.namedtuple sets them, in torch's lazy imports too)
    assert "('__defaults__', ''), ('__kwdefaults__', '')] (1, 2) Point(x=1, y=0)" in out


def test_the_control_without_the_hook_all_five_work():
    assert tried(install=False).strip() == "[] (5, 5) Point(x=1, y=0)"


def test_the_worker_s_own_checks_raise_no_audit_event_per_object():
    """The integrity check and the hygiene fingerprint would call the hook thousands of times a request if they read
    ``__code__`` or called ``id()`` per object; they raise at most a few events. Control: one ``__code__`` read is
    one event, so the counter counts."""
    counted = {"n": 0, "on": False}

    def count(event, args):
        if counted["on"]:
            counted["n"] += 1
    sys.addaudithook(count)  # for the rest of this test process: it only counts while "on"
    watched = integrity.watched("autograder.worker")
    cells = integrity.cells(watched)
    machinery = integrity.snapshot(watched, cells)
    assert len(machinery) > 1000
    modules = {"m": types.ModuleType("m")}
    baseline = hygiene.fingerprint(modules)
    counted["on"] = True
    assert integrity.snapshot(watched, cells, machinery) is True
    assert hygiene.changes(baseline, hygiene.fingerprint(modules)) == []
    counted["on"] = False
    assert counted["n"] <= 10, counted["n"]  # the snapshot's one get_referents; the fingerprint's file listings
    counted["n"], counted["on"] = 0, True
    integrity.snapshot.__code__  # noqa: B018 - the control: an audited read
    counted["on"] = False
    assert counted["n"] == 1


def test_hygiene_sees_a_name_rebound_to_an_object_that_says_it_equals_anything():
    class EqualToAnything:
        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    module = types.ModuleType("m")
    module.helper = object()
    modules = {"m": module}
    before = hygiene.fingerprint(modules)
    assert hygiene.changes(before, hygiene.fingerprint(modules)) == []  # control
    module.helper = EqualToAnything()
    assert hygiene.changes(before, hygiene.fingerprint(modules)) == ["your modules' globals"]
