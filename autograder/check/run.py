"""Replay the public cases against a student's folder, each step in its own worker."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading import judge as judges
from autograder.grading.check import Tolerances
from autograder.grading.runner import SubmissionRunner
from autograder.grading.tensors import Tolerance
from autograder.grading.verdict import FAILED, NOT_ATTEMPTED, PASSED
from autograder.grading.zygote import Zygote


@dataclass
class CountResult:
    count: str
    status: str = PASSED
    points: float = 0.0
    max_points: float = 0.0
    feedback: list[str] = field(default_factory=list)
    case: str = ""


@dataclass
class StepResult:
    step: str
    title: str
    counts: list[CountResult]

    @property
    def status(self) -> str:
        statuses = {c.status for c in self.counts}
        if statuses == {NOT_ATTEMPTED}:
            return NOT_ATTEMPTED
        return PASSED if statuses == {PASSED} else FAILED

    @property
    def points(self) -> float:
        return sum(c.points for c in self.counts)

    @property
    def max_points(self) -> float:
        return sum(c.max_points for c in self.counts)


def _tolerances(spec: dict) -> Tolerances:
    t = spec["tolerance"]
    return Tolerances(Tolerance(*t["float32"]), Tolerance(*t["float64"]))


def run_check(folder: Path, data: dict, zygote: Zygote, steps: list[str] | None = None) -> list[StepResult]:
    by_count: dict[tuple[str, str], list[dict]] = {}
    for case in data["cases"]:
        by_count.setdefault((case["step"], case["count"]), []).append(case)
    times = {s: spec["time_limit"] for s, spec in data["steps"].items()}
    # No stand-ins on the student side: they are reference code, which a student copy never has.
    runner = SubmissionRunner(zygote, folder, data["modules"], {}, times)
    results = []
    try:
        for step, spec in data["steps"].items():
            if steps and step not in steps and step.split(".", 1)[0] not in steps:
                continue
            counts = []
            for count, cspec in spec["counts"].items():
                if cspec["visibility"] != "public":
                    continue
                result = CountResult(count, max_points=cspec["points"])
                tol = _tolerances(spec)
                for case in by_count.get((step, count), []):
                    got = runner.run(step, case["request"])
                    verdict = judges.judge(case, case["expected"], got, tol.for_answer(case["expected"]), True)
                    if not verdict.passed:
                        result.status, result.feedback, result.case = verdict.status, verdict.lines, case["name"]
                        break
                result.points = result.max_points if result.status == PASSED else 0.0
                counts.append(result)
            if counts:
                results.append(StepResult(step, spec["title"], counts))
    finally:
        runner.close()
    return results
