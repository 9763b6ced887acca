"""Compare a class's submissions, and last term's, into the similarity reports: the pipeline ``grade similarity``
runs (``commands/similarity.py`` says where the reports are), callable from a script or a notebook too.

It reads and parses code, never runs it, and gives no verdict: pairs ranked by the code they share beyond what
everyone may share (tests/integration/test_similarity.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import CourseError, load_course
from autograder.intake.discover import Source, discover, nbgrader_submissions
from autograder.usage import UsageError

from .extract import collect


@dataclass
class Outcome:
    html: Path
    json: Path
    pairs: list[dict]
    submissions: int
    previous: int
    compared: int
    candidates: int
    seconds: float
    problems: list[str] = field(default_factory=list)


def _sources(paths: list[Path], modules: list[str], nbgrader: Path | None = None,
             assignment: str | None = None) -> tuple[list[Source], list[str]]:
    if nbgrader is not None:
        sources, _, problems = nbgrader_submissions(nbgrader, assignment)
        return sources, problems
    return discover(paths, modules)


def compare_class(submissions: list[Path], out: Path, against: Path | None = None, *,
                  course_file: Path = Path("course.yml"), nbgrader: Path | None = None, assignment: str | None = None,
                  top: int = 50) -> Outcome:
    """Compare ``submissions`` (as ``grade autograde`` takes them), and last term's (``against``), into
    ``out/similarity.html`` and ``out/similarity.json``."""
    try:
        import copydetect  # noqa: F401, PLC0415 - optional: the similarity extra
    except ImportError:
        raise UsageError("grade similarity needs copydetect: pip install -e '.[similarity]'") from None
    from . import boilerplate, report_html, report_json  # noqa: PLC0415 - after copydetect is known to be there
    from .fingerprint import Alphabet  # noqa: PLC0415 - after copydetect is known to be there
    from .rank import compare  # noqa: PLC0415 - after copydetect is known to be there

    start = time.monotonic()
    try:
        course = load_course(course_file)
    except CourseError as exc:
        raise UsageError(str(exc)) from None
    steps_by_module = course.steps_by_module()
    sources, problems = _sources(list(submissions), course.modules, nbgrader, assignment)
    if not sources:
        raise UsageError("no submission to compare" + (f": {problems[0]}" if problems else ""))
    subs = collect(sources, steps_by_module)
    previous = []
    if against is not None:
        against = Path(against)
        if (against / "submitted").is_dir():
            old, more = nbgrader_submissions(against, assignment)[0::2]
        else:
            old, more = discover([against], course.modules)
        problems += [f"{against.name} (previous term): {p}" for p in more]
        previous = collect(old, steps_by_module, term="previous")
    alphabet = Alphabet()
    root = Path(course_file).resolve().parent
    excluded, used = boilerplate.kgrams(root, course.exercises, course.solutions, steps_by_module, alphabet)
    comparison = compare(subs + previous, alphabet, excluded)
    out.mkdir(parents=True, exist_ok=True)
    pairs = report_json.write(out / "similarity.json", comparison)
    seconds = time.monotonic() - start
    report_html.write(out / "similarity.html", comparison, subs + previous, course, used, problems, top=top,
                      seconds=seconds)
    return Outcome(out / "similarity.html", out / "similarity.json", pairs, len(subs), len(previous),
                   comparison.compared, comparison.candidates, seconds, problems)
