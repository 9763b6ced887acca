"""What ships to students is decided by folders (``release/student_code.py: SHIPPED``), and the bundle stays inside them.

Read from the source, not run: the import closure of the student's ``grade check`` (its command, ``check/`` and
``worker/``) reaches only modules of the shipped folders, never ``grading/suites/`` (the hidden suites' engine and
the reference's loader) nor any other folder of the instructor's; every shipped folder is reached (the list names
nothing stale). The control: one import of the instructor's engine from a shipped module stops the release.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograder.release.student_code import (NOT_SHIPPED, SHIPPED, SHIPPED_MODULES, ReleaseError, closure, shipped,
                                             student_cli)

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"


def _closure(root: Path = PACKAGE) -> dict[str, Path]:
    return closure(student_cli((root / "cli.py").read_text(encoding="utf-8")), root)


def test_the_student_bundle_stays_inside_the_shipped_folders():
    modules = _closure()
    assert [name for name in modules if not shipped(name)] == []
    folders = {name.split(".")[1] for name in modules if name not in SHIPPED_MODULES}
    assert folders == set(SHIPPED), "a shipped folder no module of grade check needs: take it off the list"
    assert not [name for name in modules if name.startswith("autograder.grading.suites")]
    for instructors in ("autograde", "assign", "unit", "course", "release", "gradescope", "nbgrader_course",
                        "lti", "export", "similarity"):
        assert not shipped(f"autograder.{instructors}.anything"), instructors
    assert NOT_SHIPPED == ("grading/suites",)


def test_a_shipped_module_reaching_the_instructor_s_engine_stops_the_release(tmp_path):
    root = tmp_path / "autograder"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    assert _closure(root)  # the control: the copy as it is releases
    judge = root / "grading" / "judge.py"
    judge.write_text(judge.read_text(encoding="utf-8") + "\n\ndef _peek():\n"
                     "    from autograder.grading.suites.session import Grader\n    return Grader\n", encoding="utf-8")
    with pytest.raises(ReleaseError, match=r"autograder\.grading\.suites.*instructor-only"):
        _closure(root)
