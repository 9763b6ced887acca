"""solutions/ is the single source: exercises/ and the public cases are exactly what it produces."""
from __future__ import annotations

import ast

import pytest

from autograder.assign.strip import MarkerError, strip_solutions, strip_tree
from autograder.check import public_cases

from .conftest import ROOT


@pytest.mark.unit
def test_exercises_are_exactly_the_stripped_solutions(tmp_path):
    stripped = strip_tree(ROOT / "solutions", tmp_path)
    committed = sorted(p.name for p in (ROOT / "exercises").glob("*.py"))
    assert committed == sorted(stripped), "exercises/ and solutions/ hold different files"
    for name in committed:
        assert (tmp_path / name).read_text() == (ROOT / "exercises" / name).read_text(), (
            f"exercises/{name} drifted from solutions/{name}: run `grade assign`")


@pytest.mark.unit
def test_no_solution_line_leaks_into_exercises():
    for path in (ROOT / "solutions").glob("*.py"):
        removed = strip_solutions(path.read_text(), path.stem).solution_lines
        exercise = (ROOT / "exercises" / path.name).read_text()
        exercise_lines = {line.strip() for line in exercise.splitlines()}
        for line in removed:
            code = line.strip()
            if code and not code.startswith("#") and code not in ("return", "pass"):
                assert code not in exercise_lines, f"solution line leaked into exercises/{path.name}: {code}"


@pytest.mark.unit
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


@pytest.mark.unit
def test_marker_errors_name_the_line():
    with pytest.raises(MarkerError, match=r"f.py:2: BEGIN SOLUTION is never closed"):
        strip_solutions("def f():\n    ### BEGIN SOLUTION\n    return 1\n", "m", "f.py")
    with pytest.raises(MarkerError, match=r"f.py:2: END SOLUTION without a BEGIN"):
        strip_solutions("def f():\n    ### END SOLUTION\n", "m", "f.py")


def course_tolerance(dtype) -> dict:
    """The course tolerance (float32: rtol 1e-4, atol 1e-5; float64: 1e-5, 1e-6), under which another CPU's rounding
    is not a drift and a changed solution is. A float64 case can carry float32's rounding: the book's float64
    cases are its float32 scores cast (`book.to(F64)`), which an Intel Xeon with AVX-512 rounds 2.4e-7 away from
    the CPU that recorded them, beyond float64's own tolerance (1e-7)."""
    import torch  # noqa: PLC0415 - imported on first use: torch is slow to load

    return {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float64 else {"rtol": 1e-4, "atol": 1e-5}


def differences(recorded, shipped) -> list[str]:
    """Where two recordings of the public cases differ beyond the course tolerance."""
    return public_cases.differences(recorded, shipped, course_tolerance)


@pytest.mark.unit
def test_the_drift_check_ignores_rounding_and_catches_a_changed_value():
    import torch  # noqa: PLC0415 - imported on first use: torch is slow to load

    a = {"cases": [{"expected": torch.tensor([0.4419, 0.6515]), "n": 2}]}
    rounding = {"cases": [{"expected": torch.tensor([0.4419 + 9.5e-7, 0.6515]), "n": 2}]}
    changed = {"cases": [{"expected": torch.tensor([0.4419 * 1.01, 0.6515]), "n": 2}]}
    assert differences(a, rounding) == []
    assert differences(a, changed) == ["cases.cases[0].expected: values differ beyond the tolerance"]
    assert differences(a, {"cases": [{"expected": torch.tensor([0.4419, 0.6515]), "n": 3}]})
    scores = {"args": [torch.tensor([1.8523844480514526, 0.4032], dtype=torch.float64)]}  # float32's rounding, cast
    cast_elsewhere = {"args": [scores["args"][0] + torch.tensor([2.384185791015625e-07, 0.0], dtype=torch.float64)]}
    assert differences(scores, cast_elsewhere) == []
    assert differences(scores, {"args": [scores["args"][0] * 1.001]}) == [
        "cases.args[0]: values differ beyond the tolerance"]


@pytest.mark.unit
def test_recording_the_same_cases_again_on_another_cpu_changes_no_file(tmp_path):
    """`grade assign` keeps the public cases it finds when the new recording is the same but for another CPU's
    rounding: the instructor's repository shows no change. Control: a changed value writes them anew."""
    import torch  # noqa: PLC0415 - imported on first use: torch is slow to load


    data = {"cases": [{"expected": {"output": torch.tensor([0.4419, 0.6515])}, "args": [torch.tensor(
        [1.8523844480514526], dtype=torch.float64)], "n": 2, "tol": 0.5}]}
    public_cases.save(data, tmp_path)
    written = (tmp_path / public_cases.TENSOR_FILE).read_bytes()
    rounded = {"cases": [{"expected": {"output": torch.tensor([0.4419 + 9.5e-7, 0.6515])}, "args": [torch.tensor(
        [1.8523844480514526 + 2.4e-7], dtype=torch.float64)], "n": 2, "tol": 0.5}]}
    public_cases.save(rounded, tmp_path)
    assert (tmp_path / public_cases.TENSOR_FILE).read_bytes() == written
    changed = {"cases": [{**rounded["cases"][0], "expected": {"output": torch.tensor([0.4419 * 1.001, 0.6515])}}]}
    public_cases.save(changed, tmp_path)
    assert (tmp_path / public_cases.TENSOR_FILE).read_bytes() != written
    assert public_cases.load(tmp_path)["cases"][0]["expected"]["output"][0] == torch.tensor(0.4419 * 1.001)
    public_cases.save({"cases": [{**changed["cases"][0], "n": 3}]}, tmp_path)  # not a tensor: exactly, or anew
    assert public_cases.load(tmp_path)["cases"][0]["n"] == 3


@pytest.mark.numerics
def test_public_cases_are_what_the_reference_records(tmp_path):
    """The committed public cases (shipped for grade check) are what `grade assign` records on this machine,
    within the course tolerance: CPUs round differently (an AMD EPYC moves 465 of 888 tensors by <= 9.5e-7)."""
    from autograder.assign.build import assign  # noqa: PLC0415 - imported on first use: torch is slow to load

    summary = assign(ROOT / "course.yml", exercises=tmp_path / "exercises", cases_dir=tmp_path)
    assert summary["public_cases"] > 100
    found = differences(public_cases.load(tmp_path), public_cases.load())
    assert found == [], f"the public cases drifted from solutions/ (run `grade assign`): {found[:5]}"


@pytest.mark.unit
def test_no_public_case_depends_on_a_seeded_dropout_mask():
    """Torch may draw another mask on a student's CPU: grade check never compares a seeded mask's values.
    Dropout's public cases are judged by their properties (zeros or x/(1-p), the keep rate); modules run with
    dropout publicly in eval mode, at p=0, or judged by its properties against their eval-mode answer (each head's
    output all zeros or that answer / (1 - p)); the seeded masks are hidden (same machine as the reference)."""

    data = public_cases.load()
    for case in data["cases"]:
        request = case["request"]
        if request.get("kind") == "module" and request.get("train") and case.get("judge") != "module_dropout":
            init = request.get("init_args", [])
            assert not any(isinstance(v, float) and v > 0 for v in init), case["name"]
        if case.get("judge") == "dropout":
            assert "output" not in (case.get("expected") or {}), case["name"]
    assert any(case.get("judge") == "dropout" for case in data["cases"])
    assert any(case.get("judge") == "module_dropout" for case in data["cases"])
