"""Put the kit's grades where nbgrader looks for them: its gradebook, and ``autograded/`` notebooks.

After ``grade autograde --nbgrader COURSE_DIR`` has graded each student in the sandbox, each count's
points go into nbgrader's own gradebook (the real database, through ``nbgrader.api.Gradebook``), as the
auto score of the test cell that ``grade nbgrader`` wrote for that count (``test_<name>_<count>`` in the
module's notebook). ``nbgrader export`` and the formgrader then show the kit's scores. Each student's
notebooks are also written to ``autograded/<student>/<assignment>/`` with the kit's feedback as the test
cells' outputs, so that ``nbgrader generate_feedback`` renders it, with the feedback page's pictures of a
failing public case above its words. Those notebooks are built from the course's own (``autograded.py``):
of a submitted notebook they carry the text of the answers only.
"""
from __future__ import annotations

import shutil
import warnings
from contextlib import contextmanager
from pathlib import Path

from autograder.intake.times import nbgrader_stamp
from autograder.pages.gradescope_html import pictures as embedded_pictures

#: the three warnings SQLAlchemy 2 gives while nbgrader's own ``Gradebook.add_submission`` runs (nbgrader 0.9.6,
#: api.py: it links a new SubmittedAssignment and its SubmittedNotebooks to the assignment, student and notebooks
#: before it adds them to the session, which it does right after, then commits): a note to nbgrader's developers,
#: not to the instructor, whose gradebook is complete. Only these are silenced, and only in that call.
NBGRADER_SA_WARNING = (r"Object of type <(SubmittedAssignment|SubmittedNotebook)> not in session, "
                       r"add operation along '(Student|Assignment|Notebook)\.submissions' will not proceed")


class GradebookError(Exception):
    """The gradebook cannot take the grades; the message says what to run first."""


def test_cell(test_name: str) -> tuple[str, str]:
    """A results.json test name ("module.step count: title") -> (notebook, grade_id) of its test cell."""
    step, count = test_name.split(":", 1)[0].split(" ", 1)
    module, name = step.split(".", 1)
    return module, f"test_{name}_{count}"


@contextmanager
def _quiet_add_submission():
    """Silence exactly SQLAlchemy's warnings about nbgrader's add_submission (``NBGRADER_SA_WARNING``)."""
    from sqlalchemy.exc import SAWarning  # noqa: PLC0415 - nbgrader's dependency

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NBGRADER_SA_WARNING, category=SAWarning)
        yield


def write(course_dir: Path, assignment: str, results: dict[str, dict], db_url: str | None = None) -> int:
    """Record each student's points (``results``: student -> results.json) in nbgrader's gradebook."""
    from nbgrader.api import Gradebook, MissingEntry  # noqa: PLC0415 - an optional dependency

    db_url = db_url or f"sqlite:///{Path(course_dir).resolve() / 'gradebook.db'}"
    written = 0
    with Gradebook(db_url) as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise GradebookError(f"the gradebook has no assignment {assignment!r}: run `nbgrader generate_assignment "
                                 f"{assignment}` in {course_dir} first") from None
        from .autograded import master_notebooks  # noqa: PLC0415 - imported on first use: torch is slow to load

        if not master_notebooks(course_dir, assignment):  # autograded/ is built from them
            raise GradebookError(f"{course_dir} has no source/{assignment}/*.ipynb (nor release/{assignment}/): "
                                 f"write the course with grade nbgrader --course-dir {course_dir}")
        for student, result in sorted(results.items()):
            gb.update_or_create_student(student)
            when = (result.get("extra_data") or {}).get("submitted_at")
            try:
                submission = gb.find_submission(assignment, student)
                if when:
                    from nbgrader.utils import parse_utc  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

                    submission.timestamp = parse_utc(when)
            except MissingEntry:
                with _quiet_add_submission():
                    submission = gb.add_submission(assignment, student, **({"timestamp": when} if when else {}))
            grades = _grades(gb, submission)
            for test in result.get("tests", []):
                notebook, grade_id = test_cell(test["name"])
                grade = grades.get((notebook, grade_id))
                if grade is None:
                    raise GradebookError(f"the gradebook's {assignment}/{notebook} has no test cell {grade_id}: "
                                         "regenerate the course with grade nbgrader --force and nbgrader "
                                         "generate_assignment --force")
                grade.auto_score = float(test["score"])
                grade.manual_score = None  # the kit's grade, not an earlier hand-entered one
                written += 1
            gb.db.commit()
    return written


def _grades(gb, submission) -> dict:
    """A submission's grades by (notebook, cell name), in one query (``find_grade`` per cell costs a query and a
    flush each: 12 of the 29 s that ``grade autograde --nbgrader`` took for 32 students, bench/RESULTS.md)."""
    from nbgrader.api import Grade, GradeCell, Notebook, SubmittedNotebook  # noqa: PLC0415 - an optional dependency

    rows = gb.db.query(Grade, GradeCell.name, Notebook.name) \
        .join(GradeCell, GradeCell.id == Grade.cell_id) \
        .join(SubmittedNotebook, SubmittedNotebook.id == Grade.notebook_id) \
        .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id) \
        .filter(SubmittedNotebook.assignment_id == submission.id)
    return {(notebook, cell): grade for grade, cell, notebook in rows}


def feedback_notebooks(course_dir: Path, assignment: str, student: str, submitted: Path, result: dict) -> Path:
    """``autograded/<student>/<assignment>/``: the course's own notebooks with the student's answers, each test
    cell showing the kit's verdict and nothing else of the submitted notebooks (``autograded.py``)."""
    from . import autograded  # noqa: PLC0415 - nbformat, an optional dependency

    pictures = embedded_pictures(result)  # the feedback page's pictures of failing public cases, by test name
    verdicts: dict[str, dict[str, list]] = {}
    for test in result.get("tests", []):
        notebook, grade_id = test_cell(test["name"])
        verdicts.setdefault(notebook, {})[grade_id] = autograded.verdict_outputs(test, pictures.get(test["name"]))
    dest = Path(course_dir) / "autograded" / student / assignment
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    autograded.write(dest, course_dir, assignment, submitted, verdicts)
    if nbgrader_stamp(submitted):  # nbgrader's own record of the time, when it is one (not a link)
        shutil.copyfile(submitted / "timestamp.txt", dest / "timestamp.txt")
    secret = submitted / "submission_secret.txt"  # nbgrader's key for the feedback's file names (release_feedback)
    if secret.is_file() and not secret.is_symlink() and secret.stat().st_size <= 1024:
        shutil.copyfile(secret, dest / "submission_secret.txt")
    return dest
