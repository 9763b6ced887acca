"""What ships to students is what ``grade check`` reaches, inside the folders that may ship.

Read from the source, not run (every import, those inside functions too):

- the bundle's modules are exactly those ``grade check`` reaches from its entry points (``ENTRIES``: its command,
  the notebook's ``%grade``, the modules started by name as processes): nothing shipped beyond them, nothing they
  reach left out;
- what it reaches lies inside the shipped folders (``release/student_code.py: SHIPPED``), never ``grading/suites/``
  (the hidden suites' engine and the reference's loader) nor any other folder of the instructor's, nor what only a
  grader holding the reference runs (``NOT_SHIPPED_MODULES``: the reference worker's two halves, the separate
  zygote's); every shipped folder is reached (the list names nothing stale).

The controls: a module one more entry reaches is found shipped beyond ``ENTRIES``; one import of the instructor's
engine, or of the reference worker, from a shipped module stops the release.
"""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from autograder.release import student_code
from autograder.release.student_code import (NOT_SHIPPED, NOT_SHIPPED_MODULES, SHIPPED, SHIPPED_MODULES, ReleaseError,
                                             closure, shipped, student_cli, student_package)

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"

#: where grade check starts besides its command (the student's cli.py, cut to ``grade check``): the notebook's
#: %grade, and the modules started by name as processes: the warm server a notebook starts (``python -m
#: autograder.check.warm_server``), a notebook's check where there is no server (``python -m autograder.check.magic``),
#: and a worker where there is no fork (``sandbox/spawned.py`` starts ``python -m autograder.worker.spawned``); where
#: there is one, the worker is forked in process (``sandbox/local_zygote.py`` runs ``worker/host.py``), which the
#: command imports
ENTRIES = ("autograder.check.magic", "autograder.check.warm_server", "autograder.worker.spawned")


def _imports(path: Path, module: str, text: str | None = None) -> set[str]:
    """The ``autograder`` names ``path`` (or ``text``) imports, anywhere in it: ``from a import b`` gives ``a`` and
    ``a.b``."""
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8") if text is None else text)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[:len(here) - node.level + 1]) if node.level else ""
            base = ".".join(part for part in (base, node.module) if part)
            names.update({base, *(f"{base}.{alias.name}" for alias in node.names)})
    return {name for name in names if name.split(".")[0] == "autograder"}


def _reached(root: Path = PACKAGE, entries=ENTRIES) -> set[str]:
    """Every module of ``root`` that the student's cli.py and the entries import, through any number of modules
    (parent packages included). ``autograder.cli`` is the student's cli.py, whatever imports it."""
    cli = root / "cli.py"
    found: set[str] = {"autograder.cli"}
    todo = [*_imports(cli, "autograder.cli", student_cli(cli.read_text(encoding="utf-8"))), *entries]
    while todo:
        name = todo.pop()
        base = root.joinpath(*name.split(".")[1:])
        path = next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)
        if name in found or path is None:  # a name of a module, not a module
            continue
        found.add(name)
        todo += _imports(path, name) | {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    return found


def _bundle(root: Path = PACKAGE) -> set[str]:
    """The modules of the student bundle's ``autograder`` (its own cli.py apart)."""
    modules = set()
    for rel in student_package(root):
        if rel.endswith(".py") and rel != "cli.py":
            parts = ["autograder", *rel[:-3].split("/")]
            modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def test_the_bundle_ships_what_grade_check_reaches_and_nothing_more():
    bundle, reached = _bundle(), _reached()
    assert sorted(bundle - reached) == [], "shipped beyond what grade check reaches"
    assert sorted(reached - bundle - {"autograder.cli"}) == [], "reached by grade check, not shipped"
    assert not set(NOT_SHIPPED_MODULES) & bundle
    assert {"autograder.worker.host", "autograder.worker.child", "autograder.sandbox.local_zygote"} <= bundle


def test_a_module_one_more_entry_reaches_is_shipped_beyond_the_entries(monkeypatch):
    monkeypatch.setattr(student_code, "START_MODULES", (*student_code.START_MODULES, "autograder.outputs.decision"))
    assert "autograder.outputs.decision" in _bundle() - _reached()


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
    assert not any(shipped(name) for name in NOT_SHIPPED_MODULES)
    assert all((PACKAGE / f"{'/'.join(name.split('.')[1:])}.py").is_file() for name in NOT_SHIPPED_MODULES)


@pytest.mark.parametrize("module, reaches, refused", [
    ("grading/judge.py", "from autograder.grading.suites.session import Grader", r"autograder\.grading\.suites"),
    ("worker/child.py", "from . import reference_server", r"autograder\.worker\.reference_server"),
])
def test_a_shipped_module_reaching_the_instructor_s_side_stops_the_release(tmp_path, module, reaches, refused):
    root = tmp_path / "autograder"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    assert _closure(root)  # the control: the copy as it is releases
    path = root / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef _peek():\n    {reaches}\n", encoding="utf-8")
    with pytest.raises(ReleaseError, match=rf"{refused}.*instructor-only"):
        _closure(root)
