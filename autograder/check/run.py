"""Replay the public cases against a student's folder, each step in its own worker."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from autograder.check import intake
from autograder.grading import failed_cells, judge as judges
from autograder.grading.cases import Tolerances
from autograder.grading.runner import SubmissionRunner
from autograder.feedback.gradients import said_once
from autograder.feedback.warned import pending, unsaid
from autograder.feedback.tolerance import Tolerance
from autograder.outputs.outcomes import CountOutcome, StepOutcome, failure_text, hints_of
from autograder.outputs.verdict import FAILED, PASSED
from autograder.grading import evidence


def _tolerances(spec: dict) -> Tolerances:
    t = spec["tolerance"]
    return Tolerances(Tolerance(*t["float32"]), Tolerance(*t["float64"]))


def selected(data: dict, steps: list[str] | None) -> list[str]:
    """The steps to show: all, or those named (a step, or a whole module)."""
    return [s for s in data["steps"] if not steps or s in steps or s.split(".", 1)[0] in steps]


def run_check(folder: Path, data: dict, zygote, steps: list[str] | None = None,
              module_errors: dict | None = None, notebooks: dict | None = None,
              notes: list[str] | None = None) -> list[StepOutcome]:
    """Each selected step's public counts; a step is checked after the steps it builds on (run too, unshown),
    and shows as blocked, not failed, when one of those fails. ``module_errors``: what the intake refused, when the
    folder was staged (else found here); ``notebooks``: the modules a staged folder read from notebooks. ``notes``,
    if given, gets what the student reads besides the steps: each notebook's cell that raised while it ran, as
    grade autograde says it (``grading/failed_cells.py``)."""
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
                              else module_errors, notebooks=notebooks)
    results, status, said = [], {}, {}
    try:
        for step, spec in data["steps"].items():
            if step not in needed:
                continue
            counts = []
            for count, cspec in spec["counts"].items():
                if cspec["visibility"] != "public":
                    continue
                counts.append(_count(runner, step, count, cspec["points"], _tolerances(spec),
                                     by_count.get((step, count), []), said))
            if not counts:
                continue
            left = pending(said, step)  # warnings no failing count showed: a note of the step's last count
            if left:
                counts[-1] = replace(counts[-1], notes=(*counts[-1].notes, *left))
                left.clear()
            step_result = StepOutcome(step, spec["title"], tuple(counts), printed=runner.printed())
            failing = [d for d in uses.get(step, []) if status.get(d, PASSED) != PASSED]
            if step_result.status == FAILED and failing and not step_result.import_error:
                step_result = replace(step_result, blocked_by=failing[0])
            status[step] = step_result.status
            if step in shown:
                results.append(step_result)
    finally:
        runner.close()
    if notes is not None:
        notes += failed_cells.report(runner.cell_errors, runner.staged_text, runner.named, set(), {})[0]
    return results


def _count(runner: SubmissionRunner, step: str, count: str, points: float, tol: Tolerances, cases: list[dict],
           said: dict) -> CountOutcome:
    """One public count's outcome: its cases in order, up to the first that fails."""
    notes: list[str] = []
    warned = pending(said, step)  # the student's own warnings, each said once in the submission (feedback/warned.py)
    for n, case in enumerate(cases, start=1):
        got = runner.run(step, case["request"])
        tolerance = tol.for_answer(case["expected"])
        verdict = judges.judge(case, case["expected"], got, tolerance, True)
        notes += [note for note in verdict.notes if note not in notes]
        warned += unsaid(verdict.warnings, said)
        if verdict.passed:
            continue
        shown = verdict.lines + notes if notes else verdict.lines
        lines = said_once(said, step, count, case["name"], shown)  # no reprint of the values
        shortened = lines is not shown
        lines = [*lines, *warned]  # the warnings about the step so far, shown where it fails
        warned.clear()
        ids, likely = hints_of(lines)
        return CountOutcome(
            step, count, verdict.status, failure_text(step, count, case["name"], verdict.status, lines),
            0.0, points, cases=n, case=case["name"], lines=tuple(lines), misconceptions=ids, likely=likely,
            evidence=None if shortened else
            evidence.collect(step, case, case["expected"], got, tolerance, True),
            import_error=step.split(".", 1)[0] if (got.get("error") or {}).get("import") else None,
            number=f"{step} {count}")
    return CountOutcome(step, count, PASSED, "", points, points, cases=len(cases), number=f"{step} {count}",
                        notes=tuple(notes))
