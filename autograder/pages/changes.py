"""Who gained or lost points on which step when a class is graded again (``--force``, or new suites).

``grade autograde`` takes a ``snapshot`` of the results it is about to replace, before regrading; the
class summary then lists each step whose points changed, with before and after.
"""
from __future__ import annotations

from pathlib import Path

from autograder.outputs.results import ResultsError, read


def points_by_step(result: dict) -> dict[str, float]:
    steps: dict[str, float] = {}
    for test in result.get("tests", []):
        step = test.get("name", "").split(" ", 1)[0]
        steps[step] = steps.get(step, 0.0) + float(test.get("score", 0))
    return steps


def snapshot(out: Path, names: list[str]) -> dict[str, dict[str, float]]:
    """Submission -> step -> points, from the results.json files about to be replaced."""
    before = {}
    for name in names:
        try:
            before[name] = points_by_step(read(Path(out) / name / "results.json").as_json())
        except ResultsError:
            continue
    return before


def compare(before: dict[str, dict[str, float]], after: dict[str, dict]) -> list[dict]:
    """One row per (submission, step) whose points changed: before, after, and the change."""
    rows = []
    for name in sorted(before):
        if name not in after:
            continue
        now = points_by_step(after[name])
        for step in sorted(set(before[name]) | set(now)):
            old, new = before[name].get(step, 0.0), now.get(step, 0.0)
            if abs(new - old) > 1e-9:
                rows.append({"submission": name, "step": step, "before": old, "after": new, "change": new - old})
    return rows
