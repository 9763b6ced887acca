"""Record the public cases by running the hidden suites' public counts against the reference."""
from __future__ import annotations

from autograder.grading.suites.plugin import GradingPlugin, tolerances_for
from autograder.grading.suites.suite_runner import run_suites
from autograder.grading.dependencies import StandinPolicy
from autograder.grading.runner import asked_standins
from autograder.outputs.verdict import PASSED


def record_public_cases(course, reference, suites) -> dict:
    recorder: list = []
    plugin = GradingPlugin(course, reference, lambda step, request: reference.run(request),
                           recorder=recorder, visibility="public")
    run_suites(suites, plugin)
    broken = [f"{s} [{c}]: {o.feedback}" for (s, c), o in plugin.outcomes.items() if o.status != PASSED]
    if broken:
        raise RuntimeError("the reference solutions fail their own public checks:\n" + "\n".join(broken))
    policy = StandinPolicy(reference.uses(), list(course.steps))
    asked: dict[str, set[str]] = {}
    for case in recorder:
        asked.setdefault(case["step"], set()).update(asked_standins(case["request"]) - {case["step"]})
    steps = {}
    for step, spec in course.steps.items():
        tol = tolerances_for(course, step)
        steps[step] = {
            "title": spec.title,
            "counts": {c: {"points": cs.points, "visibility": cs.visibility} for c, cs in spec.counts.items()},
            "tolerance": {"float32": [tol.float32.rtol, tol.float32.atol],
                          "float64": [tol.float64.rtol, tol.float64.atol]},
            "time_limit": course.step_time(step),
            # the steps it builds on: grade check shows it as blocked while one of those fails
            "uses": sorted(policy.builds_on(step, asked.get(step, set())), key=list(course.steps).index),
        }
    cases = [{k: v for k, v in case.items()} for case in recorder]
    lim = course.limits
    # grade check applies the limits grade autograde applies, with the same words
    limits = {"memory_mb": lim.memory_mb, "processes": lim.processes, "output_mb": lim.output_mb,
              "submission_seconds": lim.submission_seconds}
    return {"unit": course.unit, "title": course.title, "modules": course.modules, "limits": limits, "steps": steps,
            "cases": cases}
