"""Gradescope's results.json, built from the outcome of every count.

Specification: https://gradescope-autograders.readthedocs.io/en/latest/specs/ (``score``,
``execution_time``, ``output``, ``visibility``, ``stdout_visibility``, ``tests[]`` with ``name``,
``number``, ``score``, ``max_score``, ``status``, ``output``, ``tags``, ``visibility``).
"""
from __future__ import annotations

from dataclasses import replace

from autograder.course import Course
from autograder.outputs.outcomes import CountOutcome
from autograder.pages import misconceptions

from .plugin import FAILED, NOT_ATTEMPTED, PASSED


def test_name(course: Course, step: str, count: str) -> str:
    return f"{step} {count}: {course.steps[step].title}"


#: each test's pointer to the one message that says why a submission, or a module, was not graded
NOT_GRADED = "not graded; the message at the top of your feedback says why"


def unreadable_modules(course: Course, outcomes: dict, module_errors: dict[str, dict]) -> list[str]:
    """Each module staging could not read (a broken notebook, not UTF-8, a link, missing), said once as a
    note; the counts of its steps then carry only a pointer to that note. Returns the notes."""
    notes = []
    by_module = course.steps_by_module()
    for module, err in module_errors.items():
        steps = [s if s.startswith(module + ".") else f"{module}.{s}" for s in by_module.get(module, [])]
        if not steps:
            continue
        notes.append(f"Not graded: {err.get('message')} (steps {', '.join(steps)}).")
        for (step, count), outcome in outcomes.items():
            if step in steps and outcome.status != PASSED:
                outcomes[(step, count)] = replace(outcome, feedback=NOT_GRADED, likely=())
    return notes


def build(course: Course, outcomes: dict[tuple[str, str], CountOutcome], *, notes: list[str] | None = None,
          execution_time: float | None = None) -> dict:
    tests = []
    total = 0.0
    summary = {PASSED: 0, FAILED: 0, NOT_ATTEMPTED: 0}
    for number, (step, spec) in enumerate(course.steps.items(), start=1):
        for sub, (count, cspec) in enumerate(spec.counts.items(), start=1):
            outcome = outcomes.get((step, count)) or CountOutcome(step, count, FAILED,
                                                                  f"{step} [{count}]: was not graded")
            score = cspec.points if outcome.status == PASSED else 0.0
            total += score
            summary[outcome.status] = summary.get(outcome.status, 0) + 1
            visibility = "visible" if cspec.visibility == "public" else course.defaults.hidden_visibility
            tests.append({
                "name": test_name(course, step, count),
                "number": f"{number}.{sub}",
                "score": score,
                "max_score": cspec.points,
                "status": "passed" if outcome.status == PASSED else "failed",
                "output": outcome.feedback if outcome.status != PASSED else "\n".join(
                    [f"{step} [{count}]: passed ({outcome.cases} cases)", *(f"  {note}" for note in outcome.notes)]),
                "tags": [step.split(".", 1)[0], count, outcome.status,
                         *(misconceptions.tags(outcome.misconceptions) if outcome.status != PASSED else [])],
                "visibility": visibility,
            })
    lines = [f"Score: {total:g} / {course.max_points():g}",
             f"{summary[PASSED]} counts passed, {summary[FAILED]} failed, {summary[NOT_ATTEMPTED]} not attempted."]
    # the isolation level is the instructor's to read (extra_data.isolation, isolation_detail; the run's last
    # lines): a student's output and feedback page say nothing of the sandbox
    lines += notes or []
    timed = {} if execution_time is None else {"execution_time": round(execution_time, 3)}
    # in the results model's order (outputs/results.py); validated once complete, extra_data and page in (graded.py)
    return {"score": total, **timed, "output": "\n".join(lines), "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}
