"""Print ``grade check`` results: a per-step table, then what to fix."""
from __future__ import annotations

from autograder.console import style
from autograder.outputs.outcomes import StepOutcome
from autograder.outputs.verdict import BLOCKED, FAILED, NOT_ATTEMPTED, PASSED
from autograder.pages import terminal_grid

MARK = {PASSED: ("passed", "green"), FAILED: ("FAILED", "red"), NOT_ATTEMPTED: ("not attempted", "yellow"),
        BLOCKED: ("blocked", "yellow")}


def table(results: list[StepOutcome], color: bool) -> str:
    width = max((len(r.step) for r in results), default=10)
    lines = [f"{'step':<{width}}  {'status':<13}  points"]
    lines.append("-" * (width + 24))
    for r in results:
        label, fg = MARK[r.status]
        status = style(f"{label:<13}", fg) if color else f"{label:<13}"
        after = f"  (fix {r.blocked_by} first)" if r.blocked_by else ""
        lines.append(f"{r.step:<{width}}  {status}  {r.points:g}/{r.max_points:g}{after}")
    total = sum(r.points for r in results)
    top = sum(r.max_points for r in results)
    lines.append("-" * (width + 24))
    lines.append(f"{'public checks':<{width}}  {'':<13}  {total:g}/{top:g}")
    return "\n".join(lines)


def details(results: list[StepOutcome], color: bool = False, notes: list[str] | tuple = ()) -> str:
    """What to fix, step by step; ``notes``: what else the student reads (a notebook's cell that raised while it
    ran)."""
    out = [f"\n{note}" for note in notes]
    imports: dict[str, tuple[list[str], list[str]]] = {}  # module -> (its error, the steps it blocks)
    for r in results:
        if r.import_error:
            failed = next(c for c in r.counts if c.import_error)
            imports.setdefault(r.import_error, ([*failed.lines] + ([f"in {r.cell}"] if r.cell else []), []))[1] \
                .append(r.step)
            continue
        if r.blocked_by:
            out.append(f"\n{r.step} ({r.title}): blocked: it builds on {r.blocked_by}, which fails its own checks; "
                       "fix that first (the hidden grading checks this step beside a correct one)")
            continue
        for c in r.counts:
            if c.status == FAILED:
                out.append(f"\n{r.step} [{c.count}] ({r.title}), case {c.case!r}:")
                if r.cell:
                    out.append(f"  defined in {r.cell}")
                out += ["  " + line for line in c.lines]
                if terminal_grid.fits(c.evidence):
                    out += ["  " + line for line in terminal_grid.render(c.evidence, color).splitlines()]
        notes = [n for c in r.counts if c.status == PASSED for n in c.notes]
        if notes:
            out.append(f"\n{r.step} ({r.title}): " + ("passed, with a note:" if r.status == PASSED else
                                                        "a note from the checks it passed:"))
            out += ["  " + note for note in dict.fromkeys(notes)]
        if r.printed and r.status == FAILED:
            out.append(f"  your code printed while {r.step} was checked:")
            out += ["  | " + line for line in r.printed.rstrip("\n").splitlines()]
    for module, (feedback, steps) in imports.items():
        out.append(f"\n{module}.py does not import, so none of its steps can be checked:")
        out += ["  " + line for line in feedback]
        out.append(f"  it blocks: {', '.join(steps)}")
    attempted_none = [r.step for r in results if r.status == NOT_ATTEMPTED]
    if attempted_none:
        out.append(f"\nNot attempted yet: {', '.join(attempted_none)}.")
    return "\n".join(out)


def as_json(results: list[StepOutcome]) -> dict:
    return {
        "score": sum(r.points for r in results),
        "max_score": sum(r.max_points for r in results),
        "steps": [{"step": r.step, "title": r.title, "status": r.status, "points": r.points,
                   "max_points": r.max_points, "blocked_by": r.blocked_by, "printed": r.printed,
                   "cell": r.cell,
                   "counts": [{"count": c.count, "status": c.status, "points": c.points, "max_points": c.max_points,
                               "case": c.case, "feedback": list(c.lines), "notes": list(c.notes),
                               "misconceptions": list(c.misconceptions)} for c in r.counts]}
                  for r in results],
    }
