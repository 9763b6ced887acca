"""``grade similarity``: rank suspiciously similar submissions, per step and overall; never a verdict."""
from __future__ import annotations

from pathlib import Path

from autograder import console
from autograder.autograde import summary
from autograder.similarity.compare_class import compare_class
from autograder.usage import UsageError


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


def _to_dashboard(out: Path) -> None:
    """Where ``out`` is a results folder of ``grade autograde``, its dashboard lists the top pairs too."""
    if summary.add_similar_pairs(out):
        console.note(f"the dashboard {out / 'summary.html'} lists the top pairs")
