"""Every case of the hidden suites, with its expected answer from the reference solutions.

The hidden suites are run in-process with the reference standing in for the student, as ``grade
assign`` does to record the public cases; here every case is kept, public and hidden, with the count
it belongs to. The notebooks' test cells replay them.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from autograder.grading.suites.plugin import GradingPlugin, item_key, tolerances_for
from autograder.grading.suites.suite_runner import run_suites
from autograder.grading.cases import Check
from autograder.outputs.verdict import PASSED
from autograder.worker import runtime


@dataclass
class Case:
    step: str
    count: str
    public: bool      # a document case of a public count: shown to students, with values
    spec: dict        # the suite's case: name, request, judge, mistakes, arg_names, ...
    expected: dict    # the reference's answer
    modules: dict     # argument index -> the (name, tensor) parameters of a module argument, as built


class _CollectingCheck(Check):
    def __init__(self, *args, sink: list, **kwargs):
        super().__init__(*args, **kwargs)
        self.sink = sink

    def _evaluate(self, case: dict, expected: dict) -> dict:
        got = super()._evaluate(case, expected)
        self.sink.append((self.step, self.count, case, expected))
        return got


class _CollectingPlugin(GradingPlugin):
    def __init__(self, course, reference, sink: list):
        super().__init__(course, reference, lambda step, request: reference.run(request))
        self.sink = sink

    @pytest.fixture
    def check(self, request):
        step, count = item_key(request.node)
        visibility = self.course.steps[step].counts[count].visibility
        c = _CollectingCheck(step, count, self.student, self.reference, tolerances_for(self.course, step),
                             public_count=visibility == "public", sink=self.sink)
        request.node.grading_check = c
        return c


def _built_modules(request: dict, reference) -> dict:
    """The module arguments (``{"$module": ...}``) of a request, built by the reference, by index."""
    built = {}
    for i, arg in enumerate(request.get("args", [])):
        if isinstance(arg, dict) and "$module" in arg:
            spec = arg["$module"]
            cls = reference.workspace.resolve(spec["target"], standin=spec.get("standin", False))
            if spec.get("seed") is not None:
                runtime.seed(spec["seed"])
            module = cls(*spec.get("init_args", []), **spec.get("init_kwargs", {}))
            built[i] = [(n, p.detach().clone()) for n, p in module.named_parameters()]
    return built


def collect_cases(course, reference, suites) -> dict[tuple[str, str], list[Case]]:
    """(step, count) -> its cases, in course.yml order; fails if the reference fails its own suites."""
    sink: list = []
    plugin = _CollectingPlugin(course, reference, sink)
    run_suites(suites, plugin)
    broken = [f"{s} [{c}]: {o.feedback}" for (s, c), o in plugin.outcomes.items() if o.status != PASSED]
    if broken:
        raise RuntimeError("the reference solutions fail their own suites:\n" + "\n".join(broken))
    by_count: dict[tuple[str, str], list[Case]] = {(s, c): [] for s, spec in course.steps.items() for c in spec.counts}
    for step, count, spec, expected in sink:
        by_count[(step, count)].append(Case(step, count, bool(spec["public"]), spec, expected,
                                            _built_modules(spec["request"], reference)))
    missing = [f"{s} [{c}]" for (s, c), cases in by_count.items() if not cases]
    if missing:
        raise RuntimeError("these counts ran no case, so a notebook could not test them: " + ", ".join(missing))
    return by_count
