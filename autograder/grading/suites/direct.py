"""The hidden tests, collected once by pytest, then called directly for each submission of a batch.

pytest's per-run machinery (configuration, collection, fixtures, reports, hooks) costs more per
submission than the tests themselves, and a batch runs the same tests hundreds of times. A test
qualifies when it is a method of a test class that asks only for ``check`` (and its own
``parametrize`` arguments), carries no mark but ``parametrize``, and the suites have no
``conftest.py``: each submission then calls it on a fresh instance of its class with a fresh
``check``, as pytest would. If any test does not qualify, every submission goes through
``pytest.main`` instead (``suite_runner.run_suites``).
"""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from .plugin import GradingPlugin, item_key


@dataclass(frozen=True)
class DirectTest:
    step: str
    count: str
    cls: type
    name: str
    params: dict
    nodeid: str

    @property
    def key(self) -> tuple[str, str]:
        return self.step, self.count


def plan(suites: Path, items: list) -> list[DirectTest] | None:
    """The collected ``items`` as direct calls, or None if one of them needs pytest to run it."""
    if any(suites.rglob("conftest.py")):
        return None
    tests = []
    for item in items:
        params = dict(getattr(getattr(item, "callspec", None), "params", None) or {})
        fixtures = set(getattr(item, "fixturenames", ())) - {"check", "request"} - set(params)
        asked = set(item._fixtureinfo.argnames) - {"check"} - set(params)
        marks = {mark.name for mark in item.iter_markers()} - {"parametrize"}
        step, count = item_key(item)
        if (fixtures or asked or marks or "check" not in item._fixtureinfo.argnames
                or getattr(item, "cls", None) is None or step is None):
            return None
        tests.append(DirectTest(step, count, item.cls, item.originalname, params, item.nodeid))
    return tests


#: what pytest.skip(), pytest.fail() and pytest.xfail() raise (BaseExceptions): as under pytest.main, the
#: test's count then gets no outcome, and grading goes on
_PYTEST_OUTCOMES = (pytest.skip.Exception, pytest.fail.Exception, pytest.xfail.Exception)


def run(tests: list[DirectTest], plugin: GradingPlugin) -> None:
    sink = io.StringIO()  # what a suite or the reference prints is not the grader's output, as under pytest.main
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        for test in plugin.select(tests, key=lambda t: t.key):
            check = plugin.new_check(test.step, test.count)

            def call(test=test, check=check):
                getattr(test.cls(), test.name)(check=check, **test.params)

            try:
                plugin.run_test(test.step, test.count, call, check, test.nodeid)
            except _PYTEST_OUTCOMES:
                pass
