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

class GradebookError(Exception):
    """The gradebook cannot take the grades; the message says what to run first."""


def test_cell(test_name: str) -> tuple[str, str]:
    """A results.json test name ("module.step count: title") -> (notebook, grade_id) of its test cell."""
    step, count = test_name.split(":", 1)[0].split(" ", 1)
    module, name = step.split(".", 1)
    return module, f"test_{name}_{count}"


def write(course_dir: Path, assignment: str, results: dict[str, dict], db_url: str | None = None) -> int:
    """Record each student's points (``results``: student -> results.json) in nbgrader's gradebook.

    One transaction for the class: nothing is written unless every student's grades are (a commit per student,
    as nbgrader's own ``add_student`` and ``add_submission`` make, cost a sync of the database file each). A
    student new to the gradebook gets the rows ``Gradebook.add_submission`` would create (``_add_submission``)."""
    from nbgrader.api import Gradebook, MissingEntry, Student, SubmittedAssignment  # noqa: PLC0415 - an optional dependency

    db_url = db_url or f"sqlite:///{Path(course_dir).resolve() / 'gradebook.db'}"
    written = 0
    with Gradebook(db_url) as gb:
        try:
            found = gb.find_assignment(assignment)
        except MissingEntry:
            raise GradebookError(f"the gradebook has no assignment {assignment!r}: run `nbgrader generate_assignment "
                                 f"{assignment}` in {course_dir} first") from None
        from .autograded import master_notebooks  # noqa: PLC0415 - imported on first use: torch is slow to load

        if not master_notebooks(course_dir, assignment):  # autograded/ is built from them
            raise GradebookError(f"{course_dir} has no source/{assignment}/*.ipynb (nor release/{assignment}/): "
                                 f"write the course with grade nbgrader --course-dir {course_dir}")
        students = {sid for (sid,) in gb.db.query(Student.id)}
        submissions = {s.student_id: s for s in gb.db.query(SubmittedAssignment)
                       .filter(SubmittedAssignment.assignment_id == found.id)}
        for student, result in sorted(results.items()):
            if student not in students:
                gb.db.add(Student(id=student))  # as update_or_create_student adds one
                students.add(student)
            when = (result.get("extra_data") or {}).get("submitted_at")
            submission = submissions.get(student)
            if submission is None:
                grades = _add_submission(gb, found, student, when)
            else:
                if when:
                    from nbgrader.utils import parse_utc  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

                    submission.timestamp = parse_utc(when)
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
                # as nbgrader's autograde leaves a cell it scored with no manual score (SaveAutoGrades._add_score):
                # else the formgrader lists every submission as waiting for manual grading
                grade.needs_manual_grade = False
                written += 1
        gb.db.commit()
    return written


def _add_submission(gb, assignment, student: str, when: str | None) -> dict:
    """The rows nbgrader's ``Gradebook.add_submission`` creates for a new submission (0.9.6, api.py: the submission,
    a submitted notebook per notebook of the assignment, a Grade per grade cell, a Comment per solution cell, a
    Comment and a Grade per task cell), added to the session but not committed; its grades of grade cells by
    (notebook, cell name), as ``_grades`` gives them. Linked by ids to the assignment, student and cells already
    in the database, so SQLAlchemy has nothing to warn about (nbgrader's own links the new rows to them first)."""
    from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook  # noqa: PLC0415 - an optional dependency
    from nbgrader.utils import parse_utc  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    grades: dict = {}
    notebooks = []
    for notebook in assignment.notebooks:
        graded = [Grade(cell_id=cell.id) for cell in notebook.grade_cells]
        grades.update({(notebook.name, cell.name): g for cell, g in zip(notebook.grade_cells, graded, strict=True)})
        comments = [Comment(cell_id=cell.id) for cell in notebook.solution_cells]
        for cell in notebook.task_cells:
            comments.append(Comment(cell_id=cell.id))
            graded.append(Grade(cell_id=cell.id))
        notebooks.append(SubmittedNotebook(notebook_id=notebook.id, grades=graded, comments=comments))
    gb.db.add(SubmittedAssignment(assignment_id=assignment.id, student_id=student, notebooks=notebooks,
                                  **({"timestamp": parse_utc(when)} if when else {})))
    return grades


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


def feedback_notebooks(course_dir: Path, assignment: str, student: str, submitted: Path, result: dict,
                       into: Path | None = None) -> Path:
    """``autograded/<student>/<assignment>/``: the course's own notebooks with the student's answers, each test
    cell showing the kit's verdict and nothing else of the submitted notebooks (``autograded.py``). ``into``: a
    folder other than the course's ``autograded/`` (``feedback_meanwhile.py`` builds there first)."""
    from . import autograded  # noqa: PLC0415 - nbformat, an optional dependency

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
