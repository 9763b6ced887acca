"""``grade similarity``: rank suspiciously similar submissions, per step and overall; never a verdict."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder import console
from autograder.autograde import summary
from autograder.course import CourseError, load_course
from autograder.intake.discover import Source, discover, nbgrader_submissions
from autograder.similarity.extract import collect
from autograder.usage import UsageError


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


def main(submissions, out: Path, against: Path | None = None, course_file: Path = Path("course.yml"),
         nbgrader: Path | None = None, assignment: str | None = None, top: int = 50) -> int:
    """``grade similarity``: write the reports, say where, and the top pairs; never a verdict."""
    if bool(submissions) == bool(nbgrader):
        raise UsageError("give SUBMISSIONS (folders, .zip archives, notebooks) or --nbgrader COURSE_DIR, "
                         "not both or neither")
    done = compare_class(list(submissions), Path(out), against, course_file=course_file, nbgrader=nbgrader,
                         assignment=assignment, top=top)
    for problem in done.problems:
        console.warn(problem, "skipped: ")
    _to_dashboard(Path(out))
    for pair in done.pairs[:5]:
        console.say(f"{pair['score']:.2f}  {pair['a']} / {pair['b']}  {', '.join(pair['steps'])}")
    console.say(f"{done.submissions} submissions" + (f" and {done.previous} of last term" if done.previous else "") +
                f" ({done.compared} pairs, {done.candidates} sharing a fingerprint) in {done.seconds:.1f} s: "
                f"{done.html}, {done.json}. A high rank is a reason to look, not a verdict.")
    return 0


def compare_class(submissions: list[Path], out: Path, against: Path | None = None, *,
                  course_file: Path = Path("course.yml"), nbgrader: Path | None = None, assignment: str | None = None,
                  top: int = 50) -> Outcome:
    """Compare ``submissions`` (as ``grade autograde`` takes them), and last term's (``against``), into
    ``out/similarity.html`` and ``out/similarity.json``."""
    try:
        import copydetect  # noqa: F401 - optional: the similarity extra
    except ImportError:
        raise UsageError("grade similarity needs copydetect: pip install -e '.[similarity]'") from None
    from autograder.similarity import boilerplate, report_html, report_json
    from autograder.similarity.rank import compare
    from autograder.similarity.fingerprint import Alphabet

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


def _to_dashboard(out: Path) -> None:
    """Where ``out`` is a results folder of ``grade autograde``, its dashboard lists the top pairs too."""
    if summary.add_similar_pairs(out):
        console.note(f"the dashboard {out / 'summary.html'} lists the top pairs")
