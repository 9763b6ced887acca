"""The student bundle's notebooks: one per module, the course's prose and stubs, ``%grade check`` under each step.

A notebook handed in from the bundle grades as the same code in ``.py`` files; its magic reads as ``grade check``.
"""
from __future__ import annotations

import ast
import json
import shutil

import pytest

from autograder.check import public_cases
from autograder.course.sources import read_module
from autograder.release import leaks
from autograder.release.student_notebooks import module_notebook, write_notebooks

from .conftest import ROOT, run_grade

SAMPLES = ROOT / "samples" / "submissions"
DATA = public_cases.load()


def _defined(source: str) -> list[str]:
    try:
        return [n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    except SyntaxError:
        return []


def fill(notebook_path, sample) -> None:
    """Write ``sample``'s code into the notebook's stub cells, as a student would (carried-over cells too)."""
    data = json.loads(notebook_path.read_text())
    pieces = {}
    for path in sample.glob("*.py"):  # the notebook's own module last: context_vector is a step of two modules
        if path.stem not in ("__init__", notebook_path.stem):
            pieces.update(read_module(path).pieces)
    pieces.update(read_module(sample / f"{notebook_path.stem}.py").pieces)
    for cell in data["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        names = _defined(source) if cell["cell_type"] == "code" else []
        if names:
            cell["source"] = "\n\n\n".join(pieces[n] for n in names)
    notebook_path.write_text(json.dumps(data))


@pytest.mark.unit
def test_each_notebook_loads_the_magic_and_checks_each_step_under_its_stub():
    for module in DATA["modules"]:
        nb = module_notebook(DATA["title"], module, ROOT / "exercises", DATA["steps"])
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        assert code[0] == "%load_ext autograder"
        stubs = read_module(ROOT / "exercises" / f"{module}.py").pieces
        for step in (s for s in DATA["steps"] if s.startswith(module + ".")):
            name = step.split(".", 1)[1]
            at = code.index(stubs[name])  # the exercise's own stub, as grade assign wrote it
            assert code[at + 1] == f"%grade check {step}"
        assert all("NotImplementedError" in c for c in code if _defined(c))


@pytest.mark.unit
def test_the_leak_scan_reads_a_notebook_s_cells(tmp_path):
    """A short solution line is a leak when a cell holds it as a whole line; in the notebook's JSON it is quoted,
    so a scan of the raw file would miss it (the control)."""
    secrets = leaks.secret_lines(ROOT / "solutions")
    short = next(code for code in secrets if len(code) < leaks.EMBEDDED_MIN and code.startswith("return "))
    write_notebooks(DATA["title"], DATA["modules"], ROOT / "exercises", DATA["steps"], tmp_path)
    assert leaks.scan(tmp_path, secrets) == []
    path = tmp_path / "simple_attention.ipynb"
    data = json.loads(path.read_text())
    data["cells"][-2]["source"] = "def f(x):\n    " + short + "\n"
    path.write_text(json.dumps(data, indent=1))
    found = leaks.scan(tmp_path, secrets)
    assert [leak.file for leak in found] == ["simple_attention.ipynb"]
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "simple_attention.json").write_text(json.dumps(data, indent=1))
    assert leaks.scan(raw, secrets) == []


@pytest.mark.slow
def test_a_notebook_from_the_bundle_grades_as_the_py_files(tmp_path):
    out = tmp_path / "bundle"
    result = run_grade("release", "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (out / "notebooks").iterdir()) == sorted(f"{m}.ipynb" for m in DATA["modules"])
    subs = tmp_path / "subs"
    shutil.copytree(SAMPLES / "carol", subs / "carol_py")
    shutil.copytree(out / "notebooks", subs / "carol_nb")
    for path in (subs / "carol_nb").glob("*.ipynb"):
        fill(path, SAMPLES / "carol")
    shutil.copytree(out / "notebooks", subs / "stubs_nb")  # the control: untouched, it scores nothing
    graded = run_grade("autograde", str(subs), "--out", str(tmp_path / "results"), "--jobs", "2", timeout=900)
    assert graded.returncode == 0, graded.stderr
    score = {name: json.loads((tmp_path / "results" / name / "results.json").read_text())
             for name in ("carol_py", "carol_nb", "stubs_nb")}
    tests = {name: {t["name"]: t["score"] for t in r["tests"]} for name, r in score.items()}
    assert tests["carol_nb"] == tests["carol_py"]
    assert 0 < score["carol_nb"]["score"] < sum(t["max_score"] for t in score["carol_nb"]["tests"])
    assert score["stubs_nb"]["score"] == 0
    # and grade check on the filled notebooks says what it says on the .py files
    nb = run_grade("check", str(subs / "carol_nb" / "causal_attention.ipynb"), timeout=300)
    py = run_grade("check", str(subs / "carol_py"), "--step", "causal_attention", timeout=300)
    assert nb.stdout.split("\n\n", 1)[0] == py.stdout.split("\n\n", 1)[0]
    assert "likely: masked after the softmax without renormalizing the rows" in nb.stdout
