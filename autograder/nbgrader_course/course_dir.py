"""``grade nbgrader``: write an nbgrader course directory from course.yml, the solutions and the suites.

    DIR/nbgrader_config.py
    DIR/source/<assignment>/<module>.ipynb     one notebook per module of course.yml
    DIR/source/<assignment>/<assignment>_data.pt   the long tensors of the cases in the open (torch.save)
    DIR/source/<assignment>/checking_helper.py      the checks the notebooks' test cells call

From there nbgrader takes over: ``nbgrader generate_assignment`` writes the students' copy into
``release/``, ``nbgrader autograde`` grades ``submitted/<student>/<assignment>/``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from .notebook_format import nbformat

from autograder.course import load_course
from autograder.grading.suites.suite_runner import validate_suites
from autograder.grading.suites.reference import Reference

from .collect import collect_cases
from .literals import DataFile
from . import helper
from .notebooks import build_notebook, helper_source

#: seconds nbgrader gives one cell; GPT-2 small's hidden cases are the slowest, at a few seconds
CELL_TIMEOUT = 300

CONFIG = '''\
# nbgrader configuration for the course written by `grade nbgrader` (attention autograder kit).
# Run nbgrader from this directory: it reads this file, keeps its database in gradebook.db here, and
# finds the notebooks under source/<assignment>/.
c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = {course_id!r}
# c.CourseDirectory.root defaults to the directory nbgrader runs in: this one.
# The gradebook (sqlite, this directory); nbgrader creates it. Students are added as they are
# autograded, or beforehand with `nbgrader db student add ID`.
# c.CourseDirectory.db_url = "sqlite:///gradebook.db"

# Graded cells run in a kernel named in the notebooks' metadata ("python3"): it must be a Python
# with torch installed. One cell's time limit, in seconds:
c.Execute.timeout = {timeout}
# A failed run is not retried: the checks are deterministic.
c.Execute.execute_retries = 0

# What students see in place of the reference code.
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
'''


class CourseDirError(Exception):
    """The course directory cannot be written (it exists, and --force was not given)."""


def config_text(course_id: str) -> str:
    return CONFIG.format(course_id=course_id, timeout=CELL_TIMEOUT)


def write_course(course_file: Path, dest: Path, assignment: str | None = None, force: bool = False) -> dict:
    """Write the nbgrader course; returns what was written (paths, points per notebook)."""
    course_file = Path(course_file).resolve()
    course = load_course(course_file)
    root = course_file.parent
    assignment = assignment or course.unit
    dest = Path(dest)
    folder = dest / "source" / assignment
    if folder.exists() and any(folder.iterdir()) and not force:
        raise CourseDirError(f"{folder} already holds an assignment: pass --force to overwrite it")

    solutions = root / course.solutions
    reference = Reference(solutions, course.modules, list(course.steps))
    suites = root / course.suites
    validate_suites(course, suites, reference)
    cases = collect_cases(course, reference, suites)

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    written = {}
    data = DataFile(f"{assignment}_data.pt")
    for module in course.modules:
        nb = build_notebook(course, module, solutions, cases, data)
        nbformat.validate(nb)
        path = folder / f"{module}.ipynb"
        nbformat.write(nb, str(path))
        written[module] = sum(c.metadata["nbgrader"].get("points", 0) for c in nb.cells
                              if c.metadata.get("nbgrader", {}).get("grade"))
    # beside the notebooks: generate_assignment copies them into release/, autograde into autograded/
    data_path = data.save(folder)
    helper_path = folder / helper.FILE
    helper_path.write_text(helper_source(course, list(course.steps), data_path.name if data_path else None),
                           encoding="utf-8")
    config = dest / "nbgrader_config.py"
    if force or not config.exists():  # an instructor's own edits survive a regeneration without --force
        config.write_text(config_text(course.unit), encoding="utf-8")
    return {"config": config, "assignment": assignment, "folder": folder, "points": written, "data": data_path,
            "helper": helper_path, "total": course.max_points()}
