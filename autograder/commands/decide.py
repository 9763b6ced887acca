"""``grade decide``: a person's decision on one hand-in (a score or an excuse, with the reason), kept beside its
results.json as ``decision.json`` (outputs/decision.py) and used by ``grade export`` and ``grade lti push``."""
from __future__ import annotations

from pathlib import Path

from autograder import console
from autograder.course import CourseError, load_course
from autograder.outputs import decision as decisions
from autograder.outputs.results import ResultsError, read
from autograder.usage import UsageError


def main(name: str, results_dir: Path = Path("results"), score: float | None = None, excuse: bool = False,
         reason: str | None = None, clear: bool = False, course_file: Path = Path("course.yml")) -> int:
    """Record (or with ``clear``, remove) the decision on hand-in ``name`` of ``results_dir``: ``score`` points of
    course.yml's, or ``excuse``; ``reason`` is required for either."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
        raise UsageError(f"{name!r}: give the name of a hand-in, as its folder in {results_dir}/ is named")
    if not results_dir.is_dir():
        raise UsageError(f"{results_dir}: no such folder (give the --out folder of grade autograde with --results)")
    folder = results_dir / name
    if clear:
        if score is not None or excuse:
            raise UsageError("--clear removes a decision: give it alone")
        try:
            decisions.path(folder).unlink()
        except FileNotFoundError:
            raise UsageError(f"{name}: no decision recorded in {folder}/") from None
        console.say(f"{name}: decision removed; grade export and grade lti push use the kit's result again")
        _refresh(course_file, results_dir)
        return 0
    if (score is None) == (not excuse):
        raise UsageError("give --score POINTS or --excuse (one of them), with --reason")
    if not (reason or "").strip():
        raise UsageError("--reason TEXT is required: say why, for whoever reads the gradebook after you")
    try:
        course = load_course(course_file)
    except CourseError as exc:
        raise UsageError(str(exc)) from None
    top = course.max_points()
    if score is not None and not 0 <= score <= top:
        raise UsageError(f"--score {score:g}: out of 0..{top:g}, the points of course.yml")
    digest = None
    if (folder / "results.json").exists():
        try:
            digest = read(folder / "results.json").extra_data.submission_hash
        except ResultsError as exc:
            console.warn(f"{folder / 'results.json'}: {exc}; the decision is recorded all the same")
    elif not folder.is_dir():
        console.warn(f"{name}: no hand-in of that name in {results_dir}/ (no results.json): recorded for a student "
                     "who handed nothing in; check the spelling if that is not so")
    try:
        made = decisions.record(folder, score, excuse, reason or "", digest)
    except decisions.DecisionError as exc:
        raise UsageError(str(exc)) from None
    console.say(f"{name}: {made.words(top)}, in {decisions.path(folder)}; grade export and grade lti push use it, "
                "and grade autograde keeps it when it grades again")
    _refresh(course_file, results_dir, course)
    return 0


def _refresh(course_file: Path, results_dir: Path, course=None) -> None:
    """The class summary of ``results_dir``, written again so that it shows the decision (when there is one)."""
    from autograder.autograde import summary

    try:
        course = course or load_course(course_file)
    except CourseError:
        return
    if summary.refresh(course, results_dir) is not None:
        console.note(f"class summary updated: {results_dir / 'summary.html'}")
