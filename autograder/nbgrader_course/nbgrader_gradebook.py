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
from pathlib import Path

from autograder.intake.times import nbgrader_stamp
from autograder.pages.gradescope_html import pictures as embedded_pictures

from . import auto_comments

class GradebookError(Exception):
    """The gradebook cannot take the grades; the message says what to run first."""


def test_cell(test_name: str) -> tuple[str, str]:
    """A results.json test name ("module.step count: title") -> (notebook, grade_id) of its test cell."""
    step, count = test_name.split(":", 1)[0].split(" ", 1)
    module, name = step.split(".", 1)
    return module, f"test_{name}_{count}"


def write(course_dir: Path, assignment: str, results: dict[str, dict], db_url: str | None = None,
          submitted: dict[str, Path] | None = None) -> int:
    """Record each student's points (``results``: student -> results.json) in nbgrader's gradebook, and (with
    ``submitted``: student -> the folder of their notebooks) nbgrader's own comment on each solution cell they handed
    in ("No response." on one left as released: ``auto_comments.py``).

    One transaction for the class: nothing is written unless every student's grades are (a commit per student,
    as nbgrader's own ``add_student`` and ``add_submission`` make, cost a sync of the database file each). The rows
    are written as a few statements of many rows each (SQLAlchemy Core): through the ORM, the flush of a new class
    of 32 (3,400 rows) took 0.35 s of one core at the end of the run, with the other idle; this way 0.04 s. A student
    new to the gradebook gets the rows ``Gradebook.add_submission`` would create (``_new_submission``); a scored
    cell is left as nbgrader's autograde leaves one (``SaveAutoGrades._add_score``): its auto score, no manual
    score, not waiting for manual grading (else the formgrader lists every submission as waiting for it). A regrade
    keeps a score a grader entered by hand in the formgrader and flags that cell for review, as nbgrader does (but
    in a notebook not handed in, which nbgrader flags for nothing)."""
    from nbgrader.api import (
        Comment, Grade, GradeCell, Gradebook, MissingEntry, SolutionCell, Student, SubmittedAssignment)
    from nbgrader.utils import parse_utc

    db_url = db_url or f"sqlite:///{Path(course_dir).resolve() / 'gradebook.db'}"
    written = 0
    with Gradebook(db_url) as gb:
        try:
            found = gb.find_assignment(assignment)
        except MissingEntry:
            raise GradebookError(f"the gradebook has no assignment {assignment!r}: run `nbgrader generate_assignment "
                                 f"{assignment}` in {course_dir} first") from None
        from .autograded import master_notebooks

        if not master_notebooks(course_dir, assignment):  # autograded/ is built from them
            raise GradebookError(f"{course_dir} has no source/{assignment}/*.ipynb (nor release/{assignment}/): "
                                 f"write the course with grade nbgrader --course-dir {course_dir}")
        students = {sid for (sid,) in gb.db.query(Student.id)}
        known_submissions = dict(gb.db.query(SubmittedAssignment.student_id, SubmittedAssignment.id)
                                 .filter(SubmittedAssignment.assignment_id == found.id))
        grade_ids = _row_ids(gb, found.id, Grade, GradeCell)
        notebooks = [(nb.id, nb.name, [(c.id, c.name) for c in nb.grade_cells],
                      [(c.id, c.name) for c in nb.solution_cells],
                      [c.id for c in nb.task_cells]) for nb in found.notebooks]
        sources = auto_comments.released(gb, found.id)
        comment_ids = _row_ids(gb, found.id, Comment, SolutionCell) if submitted else {}
        rows = Rows()
        for student, result in sorted(results.items()):
            scores = {test_cell(test["name"]): float(test["score"]) for test in result.get("tests", [])}
            if student not in students:
                rows.add(Student, id=student)  # as update_or_create_student adds one
            when = (result.get("extra_data") or {}).get("submitted_at")
            folder = (submitted or {}).get(student)
            comments = auto_comments.comments(folder, sources)
            if student in known_submissions:  # its grades and comments are updated
                known = grade_ids.get(student, {})
                if when:
                    rows.stamp(known_submissions[student], parse_utc(when))
                for cell, comment in comments.items():
                    if cell in comment_ids.get(student, {}):
                        rows.comment(comment_ids[student][cell], comment)
            else:  # its rows are made with the scores and comments in them
                known = _new_submission(rows, found.id, notebooks, student, parse_utc(when) if when else None, scores,
                                        comments)
            for (notebook, grade_id), score in scores.items():
                grade = known.get((notebook, grade_id))
                if grade is None:
                    raise GradebookError(f"the gradebook's {assignment}/{notebook} has no test cell {grade_id}: "
                                         "regenerate the course with grade nbgrader --force and nbgrader "
                                         "generate_assignment --force")
                if student in known_submissions:  # a notebook not handed in: not for review, as nbgrader has it
                    rows.score(grade, score, handed_in=folder is None or (Path(folder) / f"{notebook}.ipynb").is_file())
                written += 1
        rows.execute(gb.db)
        gb.db.commit()
    return written


class Rows:
    """The class's rows, gathered first and written together: new rows by table, then the updates."""

    def __init__(self) -> None:
        self.new: dict = {}  # a mapped class -> its new rows
        self.stamps: list[dict] = []
        self.scores: list[dict] = []
        self.scores_missing: list[dict] = []  # of notebooks not handed in
        self.comments: list[dict] = []

    def add(self, table, **row) -> None:
        self.new.setdefault(table, []).append(row)

    def stamp(self, submission_id: str, when) -> None:
        self.stamps.append({"row": submission_id, "when": when})

    def score(self, grade_id: str, score: float, handed_in: bool = True) -> None:
        (self.scores if handed_in else self.scores_missing).append({"row": grade_id, "score": score})

    def comment(self, comment_id: str, text: str | None) -> None:
        self.comments.append({"row": comment_id, "text": text})

    def execute(self, db) -> None:
        from nbgrader.api import Comment, Grade, Student, SubmittedAssignment, SubmittedNotebook
        from sqlalchemy import bindparam, insert, update

        for table in (Student, SubmittedAssignment, SubmittedNotebook, Grade, Comment):  # each row after what it names
            if table in self.new:
                db.execute(insert(table.__table__), self.new[table])
        submissions, grades, comments = SubmittedAssignment.__table__, Grade.__table__, Comment.__table__
        if self.stamps:
            db.execute(update(submissions).where(submissions.c.id == bindparam("row"))
                       .values(timestamp=bindparam("when")), self.stamps)
        if self.scores:  # a regrade: the new auto score; a grader's manual score stays, flagged for review, as
            # nbgrader's own autograde leaves it (SaveAutoGrades._add_score): the formgrader shows it again
            db.execute(update(grades).where(grades.c.id == bindparam("row"))
                       .values(auto_score=bindparam("score"), needs_manual_grade=grades.c.manual_score.isnot(None)),
                       self.scores)
        if self.scores_missing:  # nbgrader's autograde of a notebook not handed in: no review, whatever was entered
            db.execute(update(grades).where(grades.c.id == bindparam("row"))
                       .values(auto_score=bindparam("score"), needs_manual_grade=False), self.scores_missing)
        if self.comments:
            db.execute(update(comments).where(comments.c.id == bindparam("row"))
                       .values(auto_comment=bindparam("text")), self.comments)


def _new_submission(rows: Rows, assignment_id: str, notebooks: list, student: str, when, scores: dict,
                    comments: dict) -> dict:
    """The rows nbgrader's ``Gradebook.add_submission`` creates for a new submission (0.9.6, api.py: the submission,
    a submitted notebook per notebook of the assignment, a Grade per grade cell, a Comment per solution cell, a
    Comment and a Grade per task cell), with ``scores`` ((notebook, cell name) -> points) in their grade cells and
    ``comments`` ((notebook, cell name) -> nbgrader's auto comment, ``auto_comments.py``) in their solution cells'
    comments; ids made as nbgrader makes them. Its grades of grade cells by (notebook, cell name), as ``_row_ids`` gives
    them."""
    from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook, new_uuid

    submission = new_uuid()
    rows.add(SubmittedAssignment, id=submission, assignment_id=assignment_id, student_id=student, timestamp=when)
    grades = {}
    for notebook_id, name, grade_cells, solution_cells, task_cells in notebooks:
        submitted = new_uuid()
        rows.add(SubmittedNotebook, id=submitted, assignment_id=submission, notebook_id=notebook_id)
        for cell_id, cell in grade_cells:
            score = scores.get((name, cell))
            grades[(name, cell)] = new_uuid()
            rows.add(Grade, id=grades[(name, cell)], notebook_id=submitted, cell_id=cell_id, auto_score=score,
                     needs_manual_grade=score is None)
        for cell_id, cell in solution_cells:
            rows.add(Comment, id=new_uuid(), notebook_id=submitted, cell_id=cell_id,
                     auto_comment=comments.get((name, cell)))
        for cell_id in task_cells:  # (every row of a table with the same keys: one statement for them all)
            rows.add(Comment, id=new_uuid(), notebook_id=submitted, cell_id=cell_id, auto_comment=None)
        for cell_id in task_cells:
            rows.add(Grade, id=new_uuid(), notebook_id=submitted, cell_id=cell_id, auto_score=None,
                     needs_manual_grade=True)
    return grades


def _row_ids(gb, assignment_id: str, table, cells) -> dict:
    """student -> the ids of their submission's rows of ``table`` (nbgrader's Grade or Comment) on cells of the kind
    ``cells`` (GradeCell, SolutionCell) by (notebook, cell name), in one query for the class (``find_grade`` per cell
    costs a query and a flush each: 12 of the 29 s that ``grade autograde --nbgrader`` took for 32 students,
    bench/RESULTS.md)."""
    from nbgrader.api import Notebook, SubmittedAssignment, SubmittedNotebook

    rows = gb.db.query(SubmittedAssignment.student_id, Notebook.name, cells.name, table.id) \
        .join(cells, cells.id == table.cell_id) \
        .join(SubmittedNotebook, SubmittedNotebook.id == table.notebook_id) \
        .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id) \
        .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id) \
        .filter(SubmittedAssignment.assignment_id == assignment_id)
    found: dict = {}
    for student, notebook, cell, row in rows:
        found.setdefault(student, {})[(notebook, cell)] = row
    return found


def feedback_notebooks(course_dir: Path, assignment: str, student: str, submitted: Path, result: dict,
                       into: Path | None = None) -> Path:
    """``autograded/<student>/<assignment>/``: the course's own notebooks with the student's answers, each test
    cell showing the kit's verdict and nothing else of the submitted notebooks (``autograded.py``). ``into``: a
    folder other than the course's ``autograded/`` (``feedback_meanwhile.py`` builds there first)."""
    from . import autograded

    pictures = embedded_pictures(result)  # the feedback page's pictures of failing public cases, by test name
    verdicts: dict[str, dict[str, list]] = {}
    for test in result.get("tests", []):
        notebook, grade_id = test_cell(test["name"])
        verdicts.setdefault(notebook, {})[grade_id] = autograded.verdict_outputs(test, pictures.get(test["name"]))
    dest = Path(into or Path(course_dir) / "autograded") / student / assignment
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
