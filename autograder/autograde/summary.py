"""The class summary written next to the results: per-step pass rates and the score distribution."""
from __future__ import annotations

import statistics
from pathlib import Path

from autograder.course import Course

from autograder.outputs.results import ResultsError, read, write_atomic


def collect(out: Path) -> dict[str, dict]:
    results = {}
    for path in sorted(out.glob("*/results.json")):
        try:
            results[path.parent.name] = read(path).as_json()
        except ResultsError:
            continue
    return results


def build(course: Course, results: dict[str, dict], grader_errors: list[str] = ()) -> dict:
    top = course.max_points()
    scores = sorted(r.get("score", 0.0) for r in results.values())
    steps = {}
    for step, spec in course.steps.items():
        passed = 0
        for result in results.values():
            mine = [t for t in result.get("tests", []) if t.get("name", "").startswith(step + " ")]
            passed += bool(mine) and all(t.get("status") == "passed" for t in mine)
        steps[step] = {"title": spec.title, "passed": passed,
                       "pass_rate": round(passed / len(results), 4) if results else 0.0}
    buckets = [0] * 10
    for score in scores:
        buckets[min(9, int(10 * score / top))] += 1 if top else 0
    return {
        "submissions": len(results),
        "max_score": top,
        "full_marks": sum(s == top for s in scores),
        "zero": sum(s == 0 for s in scores),
        "mean": round(statistics.fmean(scores), 3) if scores else None,
        "median": statistics.median(scores) if scores else None,
        "min": scores[0] if scores else None,
        "max": scores[-1] if scores else None,
        "distribution": [{"from_percent": 10 * i, "to_percent": 10 * (i + 1), "submissions": n}
                         for i, n in enumerate(buckets)],
        "steps": steps,
        "grader_errors": list(grader_errors),  # submissions where the grader itself failed (grader_errors.log)
    }


def as_markdown(summary: dict) -> str:
    lines = [f"# Class summary: {summary['submissions']} submissions", "",
             f"Score out of {summary['max_score']:g}: mean {summary['mean']}, median {summary['median']}, "
             f"min {summary['min']}, max {summary['max']}; {summary['full_marks']} with full marks, "
             f"{summary['zero']} with zero.", "", "| score (% of max) | submissions |", "| --- | --- |"]
    lines += [f"| {b['from_percent']}-{b['to_percent']}% | {b['submissions']} |" for b in summary["distribution"]]
    lines += ["", "| step | passed | pass rate |", "| --- | --- | --- |"]
    lines += [f"| {step} ({s['title']}) | {s['passed']} | {100 * s['pass_rate']:.0f}% |" for step, s in summary["steps"].items()]
    if summary.get("grader_errors"):
        lines += ["", f"**The grader itself failed** while grading {len(summary['grader_errors'])} submission(s): "
                  f"{', '.join(summary['grader_errors'])}. Their tracebacks are in grader_errors.log; fix the "
                  "suite and re-run (the grader's hash changes, so they are graded again)."]
    return "\n".join(lines) + "\n"


def write(course: Course, out: Path, grader_errors: list[str] = ()) -> dict:
    summary = build(course, collect(out), grader_errors)
    write_atomic(out / "summary.json", summary)
    (out / "summary.md").write_text(as_markdown(summary), encoding="utf-8")
    return summary
