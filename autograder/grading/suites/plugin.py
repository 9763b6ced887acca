"""A pytest plugin: hands each hidden test its ``check`` and records each count's outcome."""
from __future__ import annotations

import traceback
from dataclasses import replace

import pytest

from autograder.course import Course
from autograder.grading.suites import reference_quotes
from autograder.grading.cases import Check, Tolerances
from autograder.outputs.outcomes import CountOutcome, hints_of
from autograder.feedback.tolerance import Tolerance
from autograder.feedback.warned import pending
from autograder.outputs.verdict import FAILED, NOT_ATTEMPTED, PASSED, StepFailure


def tolerances_for(course: Course, step: str) -> Tolerances:
    t = course.tolerances(step)
    return Tolerances(Tolerance(t.float32.rtol, t.float32.atol), Tolerance(t.float64.rtol, t.float64.atol))


def item_key(item) -> tuple[str | None, str]:
    step = getattr(getattr(item, "cls", None), "step", None)
    name = getattr(item, "originalname", None) or item.name
    return step, name.removeprefix("test_")


class GradingPlugin:
    def __init__(self, course: Course, reference, student, *, recorder: list | None = None,
                 visibility: str | None = None, collect_only: bool = False, cache: dict | None = None,
                 reference_lines: set[str] | None = None, late_steps=None):
        self.course = course
        self.reference = reference
        self.student = student  # callable(step, request) -> answer
        self.recorder = recorder
        self.visibility = visibility  # "public" to run public counts only
        self.collect_only = collect_only
        self.cache = cache
        self.reference_lines = reference_lines or set()
        self.late_steps = set(late_steps or ())
        self.outcomes: dict[tuple[str, str], CountOutcome] = {}
        self.collected: list[tuple[str | None, str]] = []
        self.items: list = []  # every test pytest collected (before selection)
        self.grader_errors: list[str] = []  # for the instructor's log, never for students
        self.grader_error_counts: list[tuple[str, str]] = []  # (step, count) the grader failed on
        self.said: dict = {}  # what each failing case said in an earlier count (feedback/gradients.said_once)

    def new_check(self, step: str, count: str) -> Check:
        visibility = self.course.steps[step].counts[count].visibility
        return Check(step, count, self.student, self.reference, tolerances_for(self.course, step),
                     recorder=self.recorder, public_count=visibility == "public", cache=self.cache,
                     said=self.said)

    def select(self, items: list, key=item_key) -> list:
        """The tests to run, in grading order: course steps in order, steps using stand-ins last."""
        keep = []
        for item in items:
            step, count = key(item)
            spec = self.course.steps.get(step)
            if spec is None or count not in spec.counts:
                continue
            if self.visibility and spec.counts[count].visibility != self.visibility:
                continue
            keep.append(item)
        # Steps that use others' stand-ins last (their workers hold reference code and are retired
        # after them, so the others can share one clean worker).
        order = {s: (s in self.late_steps, i) for i, s in enumerate(self.course.steps)}
        keep.sort(key=lambda i: order[key(i)[0]])
        return [] if self.collect_only else keep

    def run_test(self, step: str, count: str, test, check: Check | None, nodeid: str) -> None:
        """Run one test (``test()``) and record its count's outcome: a failure becomes feedback."""
        status, feedback, case, evidence, lines = PASSED, "", "", None, ()
        try:
            test()
        except StepFailure as exc:
            status, case, lines = exc.verdict.status, exc.case, exc.verdict.lines
            feedback = reference_quotes.reference_lines(exc.feedback(), self.reference_lines)
            evidence = getattr(exc, "evidence", None)
        except Exception as exc:  # noqa: BLE001 - a bug in a suite must not stop the batch
            status = FAILED
            # The student reads that it is not their fault; the text, which may quote hidden values, is the
            # instructor's (grader_errors.log).
            feedback = (f"{step} [{count}]: the grader itself failed on this count, not your code; please "
                        f"tell your instructor ({type(exc).__name__})")
            self.grader_errors.append(f"{nodeid}: {traceback.format_exc(limit=-3)}")
            self.grader_error_counts.append((step, count))
        ids, likely = hints_of(lines)
        shown = feedback.split("\n")  # a hint the reference filter removed from the words is not shown either
        spec = self.course.steps[step].counts[count]
        self.outcomes[(step, count)] = CountOutcome(
            step, count, status, feedback, points=spec.points if status == PASSED else 0.0, max_points=spec.points,
            public=spec.visibility == "public", cases=getattr(check, "cases_run", 0), case=case, evidence=evidence,
            misconceptions=ids, likely=tuple(h for h in likely if f"  likely: {h}" in shown),
            notes=tuple(getattr(check, "notes", ())) if status == PASSED else ())

    def place_warnings(self) -> None:
        """The warnings about a step's lines that no failing count of it showed (``feedback/warned.py: pending``):
        notes of the step's last count, said once, after every count has run."""
        last: dict[str, tuple[str, str]] = {}
        for step, count in self.outcomes:
            last[step] = (step, count)
        for step, key in last.items():
            left = pending(self.said, step)
            if left:
                outcome = self.outcomes[key]
                self.outcomes[key] = replace(outcome, notes=(*outcome.notes, *left))
                left.clear()

    # -- as a pytest plugin ----------------------------------------------------------------------
    @pytest.fixture
    def check(self, request):
        request.node.grading_check = c = self.new_check(*item_key(request.node))
        return c

    def pytest_collection_modifyitems(self, session, config, items):
        self.collected = [item_key(i) for i in items]
        self.items = list(items)
        items[:] = self.select(items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        """Call the test ourselves: a failure becomes feedback, not a pytest traceback (slow to format)."""
        args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        self.run_test(*item_key(pyfuncitem), lambda: pyfuncitem.obj(**args),
                      getattr(pyfuncitem, "grading_check", None), pyfuncitem.nodeid)
        return True

    def pytest_runtest_logreport(self, report):
        if report.when == "setup" and report.failed:
            self.grader_errors.append(f"{report.nodeid}: setup failed: {report.longreprtext[-500:]}")


__all__ = ["GradingPlugin", "CountOutcome", "PASSED", "FAILED", "NOT_ATTEMPTED"]
