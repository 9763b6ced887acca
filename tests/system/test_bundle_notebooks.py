"""The student bundle's notebooks: one per module, the course's prose and stubs, ``%grade check`` under each step.

A notebook handed in from the bundle grades as the same code in ``.py`` files; its magic reads as ``grade check``.
"""
from __future__ import annotations

import ast
import json
import re
import shutil

import pytest

from autograder.check import public_cases
from autograder.course.sources import read_module
from autograder.release import leaks
from autograder.release.student_notebooks import module_notebook, write_notebooks

from .conftest import ROOT, run_grade
from .test_magic import warm  # noqa: F401 - the fixture: the warm server on, in a folder of the test's own

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


def test_a_notebook_from_the_bundle_grades_as_the_py_files(tmp_path, release_bundle):
    out = release_bundle  # grade release's, once per run: only read here
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


def _filled_bundle(dest):
    """The bundle's notebooks (``grade release`` writes the same), each filled in with the reference."""
    write_notebooks(DATA["title"], DATA["modules"], ROOT / "exercises", DATA["steps"], dest)
    for path in dest.glob("*.ipynb"):
        fill(path, ROOT / "solutions")
    return dest


SCRATCH = "attn = book_inputs @ book_inputs"  # a last exploratory cell that raises, as in Jupyter


def test_a_failing_scratch_cell_costs_nothing_and_is_named(tmp_path):
    """The cells above a failing cell ran in Jupyter, and nbgrader runs past it: every step is graded, the cell is
    named to the student by notebook and cell, and no person is asked to look (it changed no grade)."""
    subs = tmp_path / "subs"
    _filled_bundle(subs / "filled")
    shutil.copytree(subs / "filled", subs / "scratch")
    path = subs / "scratch" / "simple_attention.ipynb"
    data = json.loads(path.read_text())
    data["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                          "source": SCRATCH})
    path.write_text(json.dumps(data))
    graded = run_grade("autograde", str(subs), "--out", str(tmp_path / "results"), "--jobs", "2", timeout=900)
    assert graded.returncode == 0, graded.stderr
    results = {n: json.loads((tmp_path / "results" / n / "results.json").read_text()) for n in ("filled", "scratch")}
    assert results["filled"]["score"] == results["scratch"]["score"] == 81
    assert (f"simple_attention.ipynb, code cell {len(data['cells'])}, line 1 raised RuntimeError"
            in results["scratch"]["output"])
    assert results["scratch"]["extra_data"]["problems"] == [] and "needs a person: none" in graded.stdout
    assert "raised" not in results["filled"]["output"]  # control: the same notebooks without it say nothing of the kind


@pytest.mark.usefixtures("warm")
def test_the_magic_without_a_step_passes_each_bundle_notebook_filled_in(tmp_path, monkeypatch):
    """``%grade check`` alone, at the end of each notebook of the bundle filled in correctly, run in a real kernel:
    every step it defines passed, as ``grade check`` of the saved notebook says (the wrapper's notebook carries
    ``CausalAttention`` over: that is not one of its steps). The kernels' checks (the one under each step, then this)
    go to one warm server, as a student's do by default: with none, each of the 28 checks loaded torch itself
    (55 CPU-s in all; about 20 with one server)."""
    from .test_magic import shown  # noqa: PLC0415 - the magic's tests' reader of a cell's outputs

    import nbformat  # noqa: PLC0415 - imported on first use: nbformat is slow to load
    from tests.support.kernels import notebook_client  # noqa: PLC0415 - optional: Jupyter's, from the test extra

    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel's magic is this kit's
    folder = _filled_bundle(tmp_path / "notebooks")
    for module in DATA["modules"]:
        path = folder / f"{module}.ipynb"
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell("%grade check"))
        notebook_client(nb, timeout=600, kernel_name="python3", iopub_timeout=120, raise_on_iopub_timeout=True,
                        resources={"metadata": {"path": str(folder)}}).execute()
        text, _html = shown(nb.cells[-1])
        steps = [s for s in DATA["steps"] if s.startswith(module + ".")]
        public = sum(c["points"] for s in steps for c in DATA["steps"][s]["counts"].values()
                     if c["visibility"] == "public")
        assert f"public checks passed; hidden cases are graded later ({public:g}/{public:g})" in text, (module, text)
        rows = [line.split()[0] for line in text.splitlines() if re.match(r"^[a-z_]+\.\w+\s+(passed|FAILED)", line)]
        assert rows == steps  # the steps this notebook defines, no other module's (control: 14/21 before)
        cli = run_grade("check", str(path), timeout=300)
        assert cli.returncode == 0 and f"{public:g}/{public:g}" in cli.stdout  # the saved notebook, from a terminal
