"""solutions/ is the single source: exercises/ and the public cases are exactly what it produces."""
from __future__ import annotations

import ast
import filecmp

import pytest

from autograder.assign.strip import MarkerError, strip_solutions, strip_tree

from .conftest import ROOT


def test_exercises_are_exactly_the_stripped_solutions(tmp_path):
    stripped = strip_tree(ROOT / "solutions", tmp_path)
    committed = sorted(p.name for p in (ROOT / "exercises").glob("*.py"))
    assert committed == sorted(stripped), "exercises/ and solutions/ hold different files"
    for name in committed:
        assert (tmp_path / name).read_text() == (ROOT / "exercises" / name).read_text(), (
            f"exercises/{name} drifted from solutions/{name}: run `grade assign`")


def test_no_solution_line_leaks_into_exercises():
    for path in (ROOT / "solutions").glob("*.py"):
        removed = strip_solutions(path.read_text(), path.stem).solution_lines
        exercise = (ROOT / "exercises" / path.name).read_text()
        exercise_lines = {line.strip() for line in exercise.splitlines()}
        for line in removed:
            code = line.strip()
            if code and not code.startswith("#") and code not in ("return", "pass"):
                assert code not in exercise_lines, f"solution line leaked into exercises/{path.name}: {code}"


def test_every_stub_raises_not_implemented_and_keeps_its_docstring():
    for path in (ROOT / "exercises").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                assert ast.get_docstring(node), f"{path.name}:{node.name} has no docstring"
                raises = [n for n in ast.walk(node) if isinstance(n, ast.Raise)]
                assert raises, f"{path.name}:{node.name} does not raise NotImplementedError"
                text = ast.unparse(raises[0])
                assert "NotImplementedError" in text and f"{path.stem}.{node.name}" in text


def test_marker_errors_name_the_line():
    with pytest.raises(MarkerError, match=r"f.py:2: BEGIN SOLUTION is never closed"):
        strip_solutions("def f():\n    ### BEGIN SOLUTION\n    return 1\n", "m", "f.py")
    with pytest.raises(MarkerError, match=r"f.py:2: END SOLUTION without a BEGIN"):
        strip_solutions("def f():\n    ### END SOLUTION\n", "m", "f.py")


@pytest.mark.slow
def test_public_cases_are_what_the_reference_records(tmp_path):
    """The committed public cases (shipped for grade check) are exactly what `grade assign` records."""
    from autograder.assign.build import assign

    summary = assign(ROOT / "course.yml", exercises=tmp_path / "exercises", cases_dir=tmp_path)
    assert summary["public_cases"] > 100
    shipped = ROOT / "autograder" / "check"
    for name in ("public_cases.json", "public_cases.safetensors"):
        assert filecmp.cmp(tmp_path / name, shipped / name, shallow=False), f"{name} drifted: run `grade assign`"
