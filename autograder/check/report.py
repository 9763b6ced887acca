"""Print ``grade check`` results: a per-step table, then what to fix."""
from __future__ import annotations

import click

from autograder.grading.verdict import FAILED, NOT_ATTEMPTED, PASSED

from .run import StepResult

MARK = {PASSED: ("passed", "green"), FAILED: ("FAILED", "red"), NOT_ATTEMPTED: ("not attempted", "yellow")}


def table(results: list[StepResult], color: bool) -> str:
    width = max((len(r.step) for r in results), default=10)
    lines = [f"{'step':<{width}}  {'status':<13}  points"]
    lines.append("-" * (width + 24))
    for r in results:
        label, fg = MARK[r.status]
        status = click.style(f"{label:<13}", fg=fg) if color else f"{label:<13}"
        lines.append(f"{r.step:<{width}}  {status}  {r.points:g}/{r.max_points:g}")
    total = sum(r.points for r in results)
    top = sum(r.max_points for r in results)
    lines.append("-" * (width + 24))
    lines.append(f"{'public checks':<{width}}  {'':<13}  {total:g}/{top:g}")
    return "\n".join(lines)


def details(results: list[StepResult]) -> str:
    out = []
    for r in results:
        for c in r.counts:
            if c.status == FAILED:
                out.append(f"\n{r.step} [{c.count}] ({r.title}), case {c.case!r}:")
                out += ["  " + line for line in c.feedback]
    attempted_none = [r.step for r in results if r.status == NOT_ATTEMPTED]
    if attempted_none:
        out.append(f"\nNot attempted yet: {', '.join(attempted_none)}.")
    return "\n".join(out)


def as_json(results: list[StepResult]) -> dict:
    return {
        "score": sum(r.points for r in results),
        "max_score": sum(r.max_points for r in results),
        "steps": [{"step": r.step, "title": r.title, "status": r.status, "points": r.points,
                   "max_points": r.max_points,
                   "counts": [{"count": c.count, "status": c.status, "points": c.points, "max_points": c.max_points,
                               "case": c.case, "feedback": c.feedback} for c in r.counts]}
                  for r in results],
    }
