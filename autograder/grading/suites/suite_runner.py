"""Run the hidden pytest suites in-process for one submission (or for recording)."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from autograder.course import Course, CourseError

from .plugin import GradingPlugin


def pytest_args(suites: Path) -> list[str]:
    return [str(suites), "-c", str(suites / "pytest.ini"), "--rootdir", str(suites.parent.parent),
            "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:warnings", "-p", "no:randomly",
            "-p", "no:logging", "-p", "no:faulthandler", "-p", "no:unraisableexception",
            "-p", "no:threadexception", "-p", "no:doctest", "-p", "no:pastebin", "-p", "no:junitxml",
            "-p", "no:stepwise", "-p", "no:nose", "-p", "no:legacypath",
            "--assert=plain"]


def run_suites(suites: Path, plugin: GradingPlugin, allow_empty: bool = False) -> int:
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        code = pytest.main(pytest_args(suites), plugins=[plugin])
    ok = ({pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED}
          | ({pytest.ExitCode.NO_TESTS_COLLECTED} if allow_empty else set()))
    if code not in ok:
        raise RuntimeError(f"the hidden suites in {suites} did not run (pytest exit "
                           f"{int(code)}):\n{sink.getvalue()[-3000:]}")
    return int(code)


def validate_suites(course: Course, suites: Path, reference) -> list:
    """Every count in course.yml has a test, and every test has a count: else stop before grading.

    Returns the collected pytest items."""
    if not suites.is_dir():
        raise CourseError(f"the hidden suites are missing: {suites} is not a folder (course.yml 'suites')")
    plugin = GradingPlugin(course, reference, student=None, collect_only=True)
    run_suites(suites, plugin, allow_empty=True)
    collected = set(plugin.collected)
    problems = []
    for step, spec in course.steps.items():
        for count in spec.counts:
            if (step, count) not in collected:
                problems.append(f"course.yml: {step} has a count {count!r} but {suites.name}/ has no test for it "
                                f"(a method test_{count} in the class marked @step({step!r}))")
    for step, count in sorted(collected, key=str):
        if step is None:
            problems.append(f"{suites.name}/: a test '{count}' is outside any @step class")
        elif step not in course.steps or count not in course.steps[step].counts:
            problems.append(f"{suites.name}/: test_{count} of {step} has no points in course.yml")
    if problems:
        raise CourseError("\n".join(problems))
    return plugin.items
