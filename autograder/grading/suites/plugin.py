"""A pytest plugin: hands each hidden test its ``check`` and records each count's outcome."""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field

import pytest

from autograder.course import Course
from autograder.grading.suites import reference_quotes
from autograder.grading.cases import Check, Tolerances
from autograder.feedback.tolerance import Tolerance
from autograder.grading.verdict import FAILED, NOT_ATTEMPTED, PASSED, StepFailure


@dataclass
class Outcome:
    step: str
    count: str
    status: str = PASSED
    feedback: str = ""
    cases: int = 0
    evidence: dict | None = None  # the failing case's arrays (public) or facts (hidden): autograder/grading/evidence.py
    #: the ids of the misconceptions its feedback names, as diagnosed (feedback/catalogue.py): its tags
    misconceptions: list[str] = field(default_factory=list)


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
        self.outcomes: dict[tuple[str, str], Outcome] = {}
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
        outcome = Outcome(step, count)
        try:
            test()
        except StepFailure as exc:
            outcome.status = exc.verdict.status
            outcome.feedback = reference_quotes.reference_lines(exc.feedback(), self.reference_lines)
            outcome.evidence = getattr(exc, "evidence", None)
            outcome.misconceptions = exc.verdict.misconceptions
        except Exception as exc:  # noqa: BLE001 - a bug in a suite must not stop the batch
            outcome.status = FAILED
            # The student reads that it is not their fault; the text, which may quote hidden values, is the
            # instructor's (grader_errors.log).
            outcome.feedback = (f"{step} [{count}]: the grader itself failed on this count, not your code; please "
                                f"tell your instructor ({type(exc).__name__})")
            self.grader_errors.append(f"{nodeid}: {traceback.format_exc(limit=-3)}")
            self.grader_error_counts.append((step, count))
        outcome.cases = getattr(check, "cases_run", 0)
        self.outcomes[(step, count)] = outcome

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


__all__ = ["GradingPlugin", "Outcome", "PASSED", "FAILED", "NOT_ATTEMPTED"]
