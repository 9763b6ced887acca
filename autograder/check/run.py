"""Replay the public cases against a student's folder, each step in its own worker."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.check import intake
from autograder.grading import judge as judges
from autograder.grading.cases import Tolerances
from autograder.grading.runner import SubmissionRunner
from autograder.feedback.gradients import said_once
from autograder.feedback.tolerance import Tolerance
from autograder.grading.verdict import FAILED, PASSED, step_status
from autograder.sandbox.zygote import Zygote
from autograder.grading import evidence



@dataclass
class CountResult:
    count: str
    status: str = PASSED
    points: float = 0.0
    max_points: float = 0.0
    feedback: list[str] = field(default_factory=list)
    case: str = ""
    import_error: str | None = None  # the module that did not import, when that is why it failed
    evidence: dict | None = None  # the failing case's arrays, for its pictures (autograder/grading/evidence.py)


@dataclass
class StepResult:
    step: str
    title: str
    counts: list[CountResult]
    blocked_by: str | None = None  # the step it builds on that fails (fix that first)
    printed: str = ""  # what the student's code printed while this step was checked
    cell: str | None = None  # the notebook cell that defines it (``check/cells.py``), when checked from a notebook

    @property
    def status(self) -> str:
        return step_status({c.status for c in self.counts}, bool(self.blocked_by))

    @property
    def import_error(self) -> str | None:
        return next((c.import_error for c in self.counts if c.import_error), None)

    @property
    def points(self) -> float:
        return sum(c.points for c in self.counts)

    @property
    def max_points(self) -> float:
        return sum(c.max_points for c in self.counts)


def _tolerances(spec: dict) -> Tolerances:
    t = spec["tolerance"]
    return Tolerances(Tolerance(*t["float32"]), Tolerance(*t["float64"]))


def selected(data: dict, steps: list[str] | None) -> list[str]:
    """The steps to show: all, or those named (a step, or a whole module)."""
    return [s for s in data["steps"] if not steps or s in steps or s.split(".", 1)[0] in steps]


def run_check(folder: Path, data: dict, zygote: Zygote, steps: list[str] | None = None,
              module_errors: dict | None = None) -> list[StepResult]:
    """Each selected step's public counts; a step is checked after the steps it builds on (run too, unshown),
    and shows as blocked, not failed, when one of those fails. ``module_errors``: what the intake refused, when the
    folder was staged (else found here)."""
    by_count: dict[tuple[str, str], list[dict]] = {}
    for case in data["cases"]:
        by_count.setdefault((case["step"], case["count"]), []).append(case)
    times = {s: spec["time_limit"] for s, spec in data["steps"].items()}
    shown = selected(data, steps)
    uses = {s: spec.get("uses", []) for s, spec in data["steps"].items()}
    needed, todo = set(shown), list(shown)
    while todo:
        for other in uses.get(todo.pop(), []):
            if other not in needed:
                needed.add(other)
                todo.append(other)
    # No stand-ins on the student side: they are reference code, which a student copy never has.
    # The intake and limits grade autograde applies (recorded by grade assign), with the same words.
    limits = dict(data.get("limits") or {})
    total = limits.pop("submission_seconds", None)
    runner = SubmissionRunner(zygote, folder, data["modules"], {}, times, limits, submission_seconds=total,
                              module_errors=intake.module_errors(folder, data["modules"]) if module_errors is None
                              else module_errors)
    results, status, said = [], {}, {}
    try:
        for step, spec in data["steps"].items():
            if step not in needed:
                continue
            counts = []
            for count, cspec in spec["counts"].items():
                if cspec["visibility"] != "public":
                    continue
                result = CountResult(count, max_points=cspec["points"])
                tol = _tolerances(spec)
                for case in by_count.get((step, count), []):
                    got = runner.run(step, case["request"])
                    tolerance = tol.for_answer(case["expected"])
                    verdict = judges.judge(case, case["expected"], got, tolerance, True)
                    if not verdict.passed:
                        lines = said_once(said, step, count, case["name"], verdict.lines)  # no reprint of the values
                        result.status, result.feedback, result.case = verdict.status, lines, case["name"]
                        result.evidence = None if lines is not verdict.lines else \
                            evidence.collect(step, case, case["expected"], got, tolerance, True)
                        if (got.get("error") or {}).get("import"):
                            result.import_error = step.split(".", 1)[0]
                        break
                result.points = result.max_points if result.status == PASSED else 0.0
                counts.append(result)
            if not counts:
                continue
            step_result = StepResult(step, spec["title"], counts, printed=runner.printed())
            failing = [d for d in uses.get(step, []) if status.get(d, PASSED) != PASSED]
            if step_result.status == FAILED and failing and not step_result.import_error:
                step_result.blocked_by = failing[0]
            status[step] = step_result.status
            if step in shown:
                results.append(step_result)
    finally:
        runner.close()
    return results
