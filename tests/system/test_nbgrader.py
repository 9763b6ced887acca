"""``grade nbgrader``: the nbgrader course it writes, and a real nbgrader round trip.

The fast tests read the source notebooks and run their cells in-process (no kernel, no nbgrader). The
round trip (slow) runs the real ``nbgrader generate_assignment`` and ``nbgrader autograde`` on three
students: ``correct`` (the solutions pasted in), ``buggy`` (one step forgets the 1/sqrt(d_k) scaling)
and ``stubs`` (the released notebooks untouched), and reads their scores from nbgrader's gradebook.
"""
from __future__ import annotations

import ast
import base64
import builtins
import csv
import importlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path

import pytest
import torch
from nbformat import v4

from autograder.course import load_course
from autograder.nbgrader_course import autograded, cell_runner, helper, literals, nbgrader_gradebook, notebooks
from autograder.nbgrader_course.autograded import without_hidden_tests
from autograder.course.sources import read_module
from autograder.pages.gradescope_html import pictures

from .conftest import ROOT, run_grade

nbformat = pytest.importorskip("nbformat")

COURSE = load_course(ROOT / "course.yml")
ASSIGNMENT = COURSE.unit
NBGRADER = Path(sys.executable).parent / "nbgrader"
V3_KEYS = {"schema_version", "grade", "locked", "solution", "task", "grade_id", "points", "checksum", "cell_type"}
BUG_STEP = "trainable_attention.scaled_attention_weights"
BUG = ("attn_scores / d_k**0.5", "attn_scores")  # forgets the 1/sqrt(d_k) scaling
STUB = "raise NotImplementedError()"


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader") or {}


def notebook(folder: Path, module: str):
    return nbformat.read(str(folder / f"{module}.ipynb"), as_version=4)


def solution_region(source: str) -> str:
    """The student's view of a solution cell: each solution region replaced by the stub."""
    return re.sub(r"(?m)^([ \t]*)### BEGIN SOLUTION\n(?:.*\n)*?[ \t]*### END SOLUTION$", rf"\1{STUB}", source)


@pytest.fixture(scope="module")
def course_dir(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("nbgrader") / "course"
    result = run_grade("nbgrader", "--course-dir", str(dest))
    assert result.returncode == 0, result.stderr
    assert f"{COURSE.max_points():g} of {COURSE.max_points():g} points" in result.stdout
    return dest


@pytest.fixture(scope="module")
def source(course_dir) -> Path:
    return course_dir / "source" / ASSIGNMENT


# -- the source notebooks -------------------------------------------------------------------------
def test_config_and_one_notebook_per_module(course_dir, source):
    config = (course_dir / "nbgrader_config.py").read_text()
    assert f"c.CourseDirectory.course_id = {ASSIGNMENT!r}" in config
    assert "c.Execute.timeout = " in config
    compile(config, "nbgrader_config.py", "exec")
    assert sorted(p.stem for p in source.glob("*.ipynb")) == sorted(COURSE.modules)
    for module in COURSE.modules:
        nb = notebook(source, module)
        nbformat.validate(nb)
        assert nb.metadata.kernelspec.name == "python3"


def test_cell_metadata_is_nbgrader_schema_3_with_unique_ids(source):
    for module in COURSE.modules:
        nb = notebook(source, module)
        grade_ids = [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c)]
        assert len(grade_ids) == len(set(grade_ids)), module
        cell_ids = [c.id for c in nb.cells]
        assert len(cell_ids) == len(set(cell_ids)), module
        kinds = set()
        for cell in nb.cells:
            meta = nbgrader_meta(cell)
            if not meta:
                assert cell.cell_type == "markdown"
                continue
            assert meta["schema_version"] == 3 and set(meta) <= V3_KEYS and meta["cell_type"] == cell.cell_type
            if meta["grade"]:
                kinds.add("test")
                assert (meta["solution"], meta["locked"]) == (False, True) and meta["points"] > 0
                assert meta["grade_id"].startswith("test_")
            elif meta["solution"]:
                kinds.add("solution")
                assert meta["locked"] is False and "points" not in meta
            else:
                kinds.add("read-only")
                assert meta["locked"] is True
        assert kinds == {"test", "solution", "read-only"}, module


def test_points_are_course_yml_points_one_test_cell_per_count(source):
    total = 0.0
    for module in COURSE.modules:
        tests = {nbgrader_meta(c)["grade_id"]: nbgrader_meta(c)["points"]
                 for c in notebook(source, module).cells if nbgrader_meta(c).get("grade")}
        expected = {f"test_{step.split('.', 1)[1]}_{count}": spec.points
                    for step, s in COURSE.steps.items() if step.startswith(module + ".")
                    for count, spec in s.counts.items()}
        assert tests == expected, module
        total += sum(tests.values())
    assert total == COURSE.max_points()


def test_solution_cells_hold_the_reference_between_markers(source):
    for module in COURSE.modules:
        pieces = read_module(ROOT / "solutions" / f"{module}.py").pieces
        cells = {nbgrader_meta(c)["grade_id"]: c.source for c in notebook(source, module).cells
                 if nbgrader_meta(c).get("solution")}
        for step in COURSE.steps:
            if step.startswith(module + "."):
                name = step.split(".", 1)[1]
                assert cells[name] == pieces[name]
                assert cells[name].count("### BEGIN SOLUTION") == cells[name].count("### END SOLUTION") >= 1


def test_the_checking_helper_is_the_feedback_package_and_the_runner_beside_the_notebooks(source):
    """checking_helper.py, beside the notebooks, is the worker's finder of unregistered layers, the feedback
    package's own modules, then cell_runner.py, each pasted whole but for the imports of one another: the words of a
    failure are the judge's, by the same functions. Each notebook's helper cell imports it; the setup cell silences
    warnings (the helper collects the student's own as it checks)."""
    pasted = helper.pasted([*helper.WORKER_MODULES, *helper.feedback_modules(), cell_runner.__name__])
    assert [name for name, _ in pasted][0] == "autograder.worker.unregistered"
    assert [name for name, _ in pasted][-1] == cell_runner.__name__
    assert {name.rsplit(".", 1)[1] for name, _ in pasted[1:-1]} == {
        p.stem for p in (ROOT / "autograder" / "feedback").glob("*.py") if p.stem != "__init__"}
    text = (source / "checking_helper.py").read_text()
    data = f"{ASSIGNMENT}_data.pt"
    assert text == notebooks.helper_source(COURSE, list(COURSE.steps), data if (source / data).exists() else None)
    for name, code in pasted:
        assert code in text, name
        body = inspect.getsource(importlib.import_module(name))
        assert all(line in body.splitlines() for line in code.splitlines()), name  # nothing rewritten
    assert not [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ImportFrom)
                and (n.level or n.module in ("__future__", "autograder") or n.module.startswith("autograder."))]
    assert len(text) < 112_000  # code, not data (the feedback package and the runner: about 100,000 characters)
    for module in COURSE.modules:
        cells = {nbgrader_meta(c).get("grade_id"): c.source for c in notebook(source, module).cells}
        assert cells["checking_helper"] == helper.import_cell()
        assert cells["checking_helper"].splitlines()[-1] == "from checking_helper import *"
        assert 'warnings.filterwarnings("ignore")' in cells["setup"]
        assert "book_inputs = torch.tensor([[0.43, 0.15, 0.89]," in cells["setup"]


def test_the_student_comes_first(source):
    """Each notebook opens with its explanation, the setup (the documents' inputs), a three-line locked cell that
    imports the checks, then the first step: nothing of the kit's 800 lines of checking code stands before the
    student's work. The control: the helper's code, which the helper cell held before, is 800 lines."""
    old_cell = notebooks.helper_source(COURSE, list(COURSE.steps), f"{ASSIGNMENT}_data.pt")
    assert len(old_cell.splitlines()) > 700  # what students scrolled past in cell 2
    for module in COURSE.modules:
        nb = notebook(source, module)
        kinds = [nbgrader_meta(c).get("grade_id", c.cell_type) for c in nb.cells]
        assert kinds[:3] == ["markdown", "setup", "checking_helper"], module
        first = next(i for i, c in enumerate(nb.cells) if nbgrader_meta(c).get("solution"))
        assert first <= 5, (module, kinds[:first + 1])  # then a step's (or a carried-over part's) explanation
        helper_cell = nb.cells[2]
        assert nbgrader_meta(helper_cell)["locked"] and len(helper_cell.source.splitlines()) <= 3
        before = "\n".join(c.source for c in nb.cells[:first] if c.cell_type == "code")
        assert len(before.splitlines()) < 60, module  # the setup's inputs and the import
        assert "def check_function" not in before and "class CheckFailed" not in before


def test_the_helper_exports_what_the_test_cells_use(source):
    """``from checking_helper import *`` brings exactly helper.EXPORTS, and every name a test cell uses is one of
    them, a setup name, an answer's or a builtin. The checks' own names (compare_values, ...) stay in the module,
    whose globals the checks use: a student's function of the same name no longer replaces one of the checks'
    (it did when the helper was pasted into the notebook)."""
    namespace: dict = {}
    exec(notebooks.helper_source(COURSE, list(COURSE.steps), "x.pt"), namespace)  # noqa: S102 - our own code
    assert sorted(namespace["__all__"]) == sorted(helper.EXPORTS)
    assert all(name in namespace for name in helper.EXPORTS)
    for module in COURSE.modules:
        nb = notebook(source, module)
        setup: dict = {}
        exec(nb.cells[1].source, setup)  # noqa: S102 - our own setup cell: the libraries and the inputs
        answers = {nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c).get("solution")}
        defined = {n.name for c in nb.cells if nbgrader_meta(c).get("solution")
                   for n in ast.parse(c.source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        for cell in nb.cells:
            if nbgrader_meta(cell).get("grade"):
                used = {n.id for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Name)}
                unknown = used - set(helper.EXPORTS) - set(setup) - defined - answers - set(dir(builtins))
                assert not unknown, (module, nbgrader_meta(cell)["grade_id"], unknown)
    spec = importlib.util.spec_from_file_location("checking_helper", source / "checking_helper.py")
    checks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checks)
    assert sorted(checks.__all__) == sorted(helper.EXPORTS) and "compare_values" not in checks.__all__
    assert checks.check_function.__globals__ is vars(checks)  # not the notebook's namespace


def test_the_helper_runs_with_torch_and_the_standard_library_only():
    code = notebooks.helper_source(COURSE, list(COURSE.steps), "attention_data.pt")
    imports = {alias.name.split(".")[0] for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Import)
               for alias in node.names}
    imports |= {node.module.split(".")[0] for node in ast.walk(ast.parse(code))
                if isinstance(node, ast.ImportFrom)}
    assert imports <= {"torch", "math", "re", "builtins", "base64", "dataclasses", "os", "traceback", "ast",
                       "linecache", "warnings"}, imports
    namespace: dict = {"__name__": "__main__"}
    exec(compile(code, "checking_helper", "exec"), namespace)  # noqa: S102 - our own code
    assert namespace["DATA_FILE"] == "attention_data.pt"
    assert namespace["TOLERANCES"][BUG_STEP][0] == (COURSE.tolerances(BUG_STEP).float32.rtol,
                                                    COURSE.tolerances(BUG_STEP).float32.atol)


def test_long_tensors_of_open_cases_go_to_the_data_file_and_read_back(tmp_path, monkeypatch):
    g = torch.Generator().manual_seed(0)
    long, small = torch.randn(10, 10, generator=g), torch.randn(2, 3, generator=g)
    data = literals.DataFile("attention_data.pt")
    with literals.storing(data):
        written = {"long": literals.tensor(long), "again": literals.tensor(long.clone()),
                   "small": literals.tensor(small),
                   "arange": literals.tensor(torch.arange(12, dtype=torch.int64).reshape(3, 4)),
                   "eye": literals.tensor(torch.eye(9, dtype=torch.float64)),
                   "full": literals.tensor(torch.full((4, 5), -float("inf"))),
                   "empty": literals.tensor(torch.zeros(0, 3))}
    hidden = literals.tensor(long)  # outside `storing`: a hidden case's, in its cell
    assert (written["long"].startswith('D("float32[10,10]:') and written["again"] == written["long"]
            and len(data.tensors) == 1)
    assert written["small"].startswith("T([[") and hidden.startswith('B("float32", [10, 10]')
    assert written["arange"] == 'torch.arange(12, dtype=torch.int64).reshape([3, 4])'
    assert written["eye"] == "torch.eye(9, dtype=torch.float64)"
    assert written["full"] == 'torch.full([4, 5], -float("inf"))' and written["empty"] == "torch.empty([0, 3])"
    assert data.save(tmp_path) == tmp_path / "attention_data.pt"
    assert literals.DataFile("none.pt").save(tmp_path) is None  # no file when no tensor needs one
    namespace: dict = {"__name__": "__main__"}
    exec(notebooks.helper_source(COURSE, [], "attention_data.pt"), namespace)  # noqa: S102 - our own code
    monkeypatch.chdir(tmp_path)  # a kernel runs in the notebook's folder
    for name, text in written.items():
        value = eval(text, namespace)  # noqa: S307 - our own literal
        source = {"long": long, "again": long, "small": small}.get(name)
        if source is not None:
            assert torch.equal(value, source) and value.dtype == source.dtype
    assert torch.equal(eval(hidden, namespace), long)  # noqa: S307 - our own literal


def open_part(cell) -> str:
    return cell.source.partition("### BEGIN HIDDEN TESTS")[0]


def test_notebooks_stay_small_simple_tensors_are_expressions(source):
    """Released notebooks stay small: a 100x100 tensor of ones is `torch.ones([100, 100])`, not 173 KB of
    base64; no test cell's open part (what students get) holds more than 20 KB, nor any B(...) blob."""
    dropout = {nbgrader_meta(c).get("grade_id"): c.source for c in notebook(source, "causal_attention").cells}
    assert "x=torch.ones([100, 100])," in dropout["test_apply_dropout_properties"]
    assert "x=torch.ones([6, 6])," in dropout["test_apply_dropout_properties"]
    for module in COURSE.modules:
        for cell in notebook(source, module).cells:
            if cell.cell_type == "code" and nbgrader_meta(cell).get("grade_id") != "checking_helper":
                assert len(open_part(cell)) < 20_000, (module, nbgrader_meta(cell).get("grade_id"))
                assert 'B("' not in open_part(cell)  # long tensors of open cases: in the data file (D)
    # 876 KB with the helper pasted; 824 KB with the cases (second calls, train/eval, float64), the hidden ones inline
    assert sum((source / f"{m}.ipynb").stat().st_size for m in COURSE.modules) < 1_000_000


def test_visible_cases_in_the_open_hidden_cases_between_markers(source):
    for module in COURSE.modules:
        for cell in notebook(source, module).cells:
            meta = nbgrader_meta(cell)
            if not meta.get("grade"):
                continue
            step, count = re.match(r"# (\S+) \[(\w+)\]", cell.source).groups()
            visible, _, rest = cell.source.partition("### BEGIN HIDDEN TESTS")
            hidden = rest.partition("### END HIDDEN TESTS")[0]
            public = COURSE.steps[step].counts[count].visibility == "public"
            assert ("check_" in visible) == public, meta["grade_id"]
            if not public:
                assert "check_" in hidden, meta["grade_id"]
            if count == "gradients":
                assert "upstream=" in cell.source and "expected_grads=" in cell.source


def test_test_cells_are_calls_of_the_checks_only(source):
    """No test cell ends in a value: nbgrader would read a number as partial credit."""
    names = {n for n, _ in inspect.getmembers(cell_runner, inspect.isfunction) if n.startswith("check_")}
    for module in COURSE.modules:
        for cell in notebook(source, module).cells:
            if nbgrader_meta(cell).get("grade"):
                for node in ast.parse(cell.source).body:
                    assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Call), cell.source[:200]
                    assert node.value.func.id in names


# -- the notebooks' cells, run in-process ---------------------------------------------------------
def run_cells(nb, replace=None, folder: Path | None = None) -> dict[str, BaseException | None]:
    """Run a notebook's code cells in one namespace, in the notebook's folder (where its data file is, as
    in a kernel); grade_id of each test cell -> what it raised."""
    namespace: dict = {"__name__": "__main__"}
    outcomes = {}
    here = os.getcwd()
    os.chdir(folder or here)
    sys.path.insert(0, str(folder or here))  # the helper cell imports checking_helper.py, as a kernel does from there
    try:
        _run_cells(nb, replace, namespace, outcomes)
    finally:
        os.chdir(here)
        sys.path.remove(str(folder or here))
        sys.modules.pop(helper.MODULE, None)
    return outcomes


def _run_cells(nb, replace, namespace: dict, outcomes: dict) -> None:
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = nbgrader_meta(cell)
        code = replace(meta, cell.source) if replace else cell.source
        try:
            exec(compile(code, meta.get("grade_id", "cell"), "exec"), namespace)  # noqa: S102 - our own notebook
            error = None
        except AssertionError as exc:
            error = exc
        if meta.get("grade"):
            outcomes[meta["grade_id"]] = error
        else:
            assert error is None, f"{meta.get('grade_id')}: {error}"


def test_reference_passes_every_test_cell(source):
    for module in COURSE.modules:
        outcomes = run_cells(notebook(source, module), folder=source)
        assert outcomes and all(e is None for e in outcomes.values()), {k: str(e) for k, e in outcomes.items() if e}


def test_a_bug_fails_its_step_only_with_a_teaching_message(source):
    name = BUG_STEP.split(".", 1)[1]

    def bug(meta, code):
        return code.replace(*BUG) if meta.get("grade_id") == name else code

    outcomes = run_cells(notebook(source, BUG_STEP.split(".")[0]), bug, source)
    failed = {k for k, e in outcomes.items() if e is not None}
    assert failed == {f"test_{name}_{c}" for c in COURSE.steps[BUG_STEP].counts}
    message = str(outcomes[f"test_{name}_values"])
    assert message.startswith(f"{BUG_STEP} [values] case ")  # as grade check and the hidden suites head it
    assert "expected values:" in message and "got      values:" in message
    assert "likely: forgot the 1/sqrt(d_k) scaling" in message
    hidden = str(outcomes[f"test_{name}_randomized"])
    assert "likely: forgot the 1/sqrt(d_k) scaling" in hidden and "expected values" not in hidden


def test_stubs_fail_every_test_cell_as_not_attempted(source):
    def stub(meta, code):
        return solution_region(code) if meta.get("solution") else code

    for module in ("simple_attention", "multihead_attention"):
        outcomes = run_cells(notebook(source, module), stub, source)
        assert all(type(e).__name__ == "CheckFailed" for e in outcomes.values())  # the cell's own class
        assert all("not attempted yet" in str(e) for g, e in outcomes.items() if "errors" not in g)


#: a student's answer that raises: its check says where, in the student's own cell
RAISES = "    raise ValueError('my own bug')\n"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def copy_beside(source: Path, folder: Path) -> None:
    """What ``nbgrader generate_assignment`` copies beside the notebooks: the other files, not the caches it ignores
    (``__pycache__``, which a source folder gains once its checking helper is imported there)."""
    for path in source.iterdir():
        if path.is_file() and not path.name.endswith((".ipynb", ".pyc")):
            shutil.copyfile(path, folder / path.name)


def kernel_run(folder: Path, nb, monkeypatch, tmp_path) -> object:
    """Run ``nb`` in a real IPython kernel (nbclient, the venv's python3 kernel), in ``folder``; errors kept."""
    pytest.importorskip("nbclient")
    from tests.support.kernels import notebook_client  # noqa: PLC0415 - Jupyter's, from the test extra

    for key, value in jupyter_env(tmp_path / "jupyter").items():
        monkeypatch.setenv(key, value)
    client = notebook_client(nb, kernel_name="python3", timeout=300, allow_errors=True,
                             resources={"metadata": {"path": str(folder)}})
    return client.execute()


def errors(cell) -> list:
    return [o for o in cell.outputs if o.output_type == "error"]


def test_a_failing_check_shows_the_kits_message_not_the_helpers_traceback(source, tmp_path, monkeypatch):
    """The student's view, in a real kernel: the released trainable_attention notebook, answered with the
    solutions but one bug and one answer that raises, beside the released checking_helper.py. A failing test
    cell shows the kit's lines and nothing else: no frame of the helper, no source line of it, not the student's
    exception it came from (the message says where that was: `your cell`). Every other test cell passes, with no
    output. The control: the same check run again without CheckFailed's ``_render_traceback_`` shows IPython's
    traceback through the helper, as every failing test cell did before."""
    module = BUG_STEP.split(".")[0]
    folder = tmp_path / "student"
    folder.mkdir()
    copy_beside(source, folder)
    nb = student_copy(source, module)
    raising = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "context_vector")
    body = raising.source.splitlines(keepends=True)
    at = next(i for i, line in enumerate(body) if line.startswith("    return"))
    raising.source = "".join(body[:at] + [RAISES] + body[at:])
    failing = next(c for c in nb.cells
                   if nbgrader_meta(c).get("grade_id") == f"test_{BUG_STEP.split('.', 1)[1]}_values")
    nb.cells.append(nbformat.v4.new_code_cell("del CheckFailed._render_traceback_"))  # the control, below
    nb.cells.append(nbformat.v4.new_code_cell(failing.source))
    ran = kernel_run(folder, nb, monkeypatch, tmp_path)

    failed = {nbgrader_meta(c)["grade_id"]: errors(c) for c in ran.cells if nbgrader_meta(c).get("grade") and errors(c)}
    assert set(failed) == {f"test_{BUG_STEP.split('.', 1)[1]}_{c}" for c in ("values", "gradients")} | {
        "test_context_vector_values", "test_context_vector_gradients"}  # the randomized counts: hidden, not here
    for grade_id, (error,) in failed.items():
        lines = [ANSI.sub("", line) for line in error.traceback]
        assert error.ename == "CheckFailed" and lines[0] == f"CheckFailed: {error.evalue.splitlines()[0]}", grade_id
        assert lines[1:] == error.evalue.splitlines()[1:], grade_id  # the message, and only the message
        assert not [line for line in lines if "checking_helper" in line or "File " in line or "_fail(" in line
                    or "Traceback" in line or "During handling" in line], grade_id
    values = [ANSI.sub("", line) for line in failed[f"test_{BUG_STEP.split('.', 1)[1]}_values"][0].traceback]
    assert values[0].startswith(f"CheckFailed: {BUG_STEP} [values] case ")
    assert "  likely: forgot the 1/sqrt(d_k) scaling" in values
    raised = "\n".join(failed["test_context_vector_values"][0].traceback)
    assert "raised ValueError" in raised and "my own bug" in raised and "your cell" in raised
    for cell in ran.cells:
        if nbgrader_meta(cell).get("grade") and nbgrader_meta(cell)["grade_id"] not in failed:
            assert cell.outputs == [], nbgrader_meta(cell)["grade_id"]  # passed, silently: nothing on stderr

    (control,) = errors(ran.cells[-1])
    shown = ANSI.sub("", "\n".join(control.traceback))
    assert "checking_helper.py" in shown and "_fail(" in shown  # IPython's traceback walks through the helper
    assert len(control.traceback) > len(values)


def test_refuses_to_overwrite_without_force(course_dir):
    result = run_grade("nbgrader", "--course-dir", str(course_dir))
    assert result.returncode == 2 and "--force" in result.stderr


# -- autograded/: built from the course's notebooks, never from the student's --------------------
#: what the planted scripts set on the page when they run (document.body.dataset)
PLANTED_KEYS = ("plantedMarkdown", "plantedImg", "plantedJs", "plantedHtml", "plantedSource")
#: the stored output of a test cell whose nbgrader metadata the student removed
FAKE = "FAKE-FULL-MARKS"
#: what must not come out of a submitted notebook: its scripts, outputs, attachments, metadata
PLANTED_TEXT = (*PLANTED_KEYS[:-1], FAKE, "PLANTED-HTML", "planted-meta", "evil.png", "widget-state")
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
FAKED_CELL = f"test_{BUG_STEP.split('.', 1)[1]}_values"  # the buggy step's: the kit fails it


def script(key: str) -> str:
    """A script that marks the page when it runs (and gives the template's ``$('#id')`` calls a ``$``)."""
    return f"<script>window.$ = window.$ || function () {{ return {{}}; }}; document.body.dataset.{key} = '1';</script>"


def plant(nb, faked: str = FAKED_CELL) -> None:
    """What a student can store in a notebook for the instructor's browser: scripts in markdown (an existing cell
    and a new one with an attachment), an ``application/javascript`` and a ``<script>``-carrying ``text/html``
    output on a solution cell, a ``</script>`` in its source, a test cell (``faked``) stripped of its nbgrader
    metadata that stores a "passed" full-marks output, and extra metadata on the notebook and its cells."""
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "version_major": 2, "version_minor": 0, "note": "widget-state planted-meta"}}
    nb.metadata["planted"] = "planted-meta"
    assert nb.cells[0].cell_type == "markdown"
    nb.cells[0].source += (f"\n\n{script('plantedMarkdown')}\n\n"
                           "<img src=\"x\" onerror=\"document.body.dataset.plantedImg = '1'\">")
    faked_cells = [c for c in nb.cells if nbgrader_meta(c).get("grade_id") == faked]
    assert len(faked_cells) == 1
    cell = faked_cells[0]
    cell.metadata = {"planted": "planted-meta"}
    cell.source = "# (a test cell: its nbgrader metadata removed, its output stored)"
    cell.execution_count = 7
    cell.outputs = [v4.new_output("stream", name="stdout", text=f"passed (2/2) {FAKE}\n"),
                    v4.new_output("execute_result", data={"text/plain": f"'{FAKE}'"}, execution_count=7)]
    answer = next(c for c in nb.cells if nbgrader_meta(c).get("solution"))
    answer.metadata["planted"] = "planted-meta"
    answer.metadata["tags"] = ["planted-meta"]
    answer.source = "# </pre><script>document.body.dataset.plantedSource = '1'</script>\n" + answer.source
    answer.execution_count = 3
    answer.outputs = [
        v4.new_output("display_data", data={"application/javascript": "document.body.dataset.plantedJs = '1';",
                                            "text/plain": "<IPython.core.display.Javascript object>"}),
        v4.new_output("execute_result", execution_count=3, data={
            "text/html": f"<b>PLANTED-HTML</b>{script('plantedHtml')}", "text/plain": "PLANTED-HTML"})]
    extra = v4.new_markdown_cell(f"![planted](attachment:evil.png)\n\n{script('plantedMarkdown')}",
                                 metadata={"planted": "planted-meta"})
    extra.attachments = {"evil.png": {"image/png": PNG_1X1}}
    nb.cells.insert(1, extra)


def old_feedback_notebook(path: Path, result: dict):
    """The control: what ``nbgrader_gradebook.feedback_notebooks`` wrote before it built from the course's notebooks:
    the submitted notebook, with only the outputs of the cells it found by the student's own grade_id replaced."""
    from autograder.nbgrader_course.nbgrader_gradebook import test_cell  # noqa: PLC0415 - at the top, pytest would collect it

    by_cell = {test_cell(t["name"]): t for t in result.get("tests", [])}
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        test = by_cell.get((path.stem, nbgrader_meta(cell).get("grade_id")))
        if cell.get("cell_type") != "code" or test is None:
            continue
        points = f"{test['score']:g}/{test['max_score']:g}"
        if test["status"] == "passed":
            cell.outputs = [v4.new_output("stream", name="stdout", text=f"passed ({points})\n")]
        else:
            lines = (test.get("output") or "failed").splitlines()
            cell.outputs = [v4.new_output("error", ename="CheckFailed", evalue=lines[0],
                                          traceback=[f"CheckFailed ({points})", *lines])]
    return nb


def kit_result(failing: set[str]) -> dict:
    """A results.json of the kit's for the whole course: every count passed but those of the steps in ``failing``."""
    tests = []
    for step, spec in COURSE.steps.items():
        for count, cspec in spec.counts.items():
            bad = step in failing
            tests.append({"name": f"{step} {count}: {spec.title}", "status": "failed" if bad else "passed",
                          "score": 0 if bad else cspec.points, "max_score": cspec.points,
                          "output": f"{step} [{count}] case 1\nlikely: forgot the 1/sqrt(d_k) scaling" if bad else ""})
    return {"tests": tests}


def student_copy(source: Path, module: str, bug: bool = True):
    """A student's notebook as the release has it (no hidden test), answered with the solutions (and the bug)."""
    nb = notebook(source, module)
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade"):
            cell.source = without_hidden_tests(cell.source)
        if nbgrader_meta(cell).get("solution"):  # the answer, as a student writes it: no markers
            cell.source = re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION\n", "", cell.source)
        if bug and nbgrader_meta(cell).get("grade_id") == BUG_STEP.split(".", 1)[1]:
            cell.source = cell.source.replace(*BUG)
    return nb


def test_autograded_notebooks_carry_only_what_the_kit_made(source, tmp_path):
    """nbgrader_gradebook.feedback_notebooks builds each autograded/ notebook from source/: the master's metadata, cells
    and ids; the student's answers as source text; no output but the kit's verdicts; no hidden test. The control:
    the old way (the submitted notebook, only its own test cells' outputs replaced) carried every plant."""
    module = BUG_STEP.split(".")[0]
    course = tmp_path / "course"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    for path in source.glob("*.ipynb"):
        (course / "source" / ASSIGNMENT / path.name).write_bytes(path.read_bytes())
    submitted = course / "submitted" / "planter" / ASSIGNMENT  # hands in one notebook of the four
    submitted.mkdir(parents=True)
    nb = student_copy(source, module)
    plant(nb)
    nbformat.write(nb, str(submitted / f"{module}.ipynb"))
    (submitted / "timestamp.txt").write_text(STAMPS["buggy"])
    result = kit_result({BUG_STEP})

    old = json.dumps(old_feedback_notebook(submitted / f"{module}.ipynb", result))
    assert [t for t in PLANTED_TEXT if t not in old] == []  # the control: the old way carried all of it

    dest = nbgrader_gradebook.feedback_notebooks(course, ASSIGNMENT, "planter", submitted, result)
    assert sorted(p.name for p in dest.iterdir()) == sorted([f"{m}.ipynb" for m in COURSE.modules] + ["timestamp.txt"])
    expected = {name: autograded.verdict_outputs(t) for t in result["tests"]
                for name in [nbgrader_gradebook.test_cell(t["name"])]}
    for m in COURSE.modules:
        text = (dest / f"{m}.ipynb").read_text()
        assert [t for t in PLANTED_TEXT if t in text] == [], m
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text, m  # neither hidden cases nor answers
        got, master = nbformat.read(str(dest / f"{m}.ipynb"), as_version=4), notebook(source, m)
        nbformat.validate(got)
        assert got.metadata == master.metadata, m
        assert [(c.id, c.cell_type, c.metadata) for c in got.cells] == [(c.id, c.cell_type, c.metadata)
                                                                        for c in master.cells]
        assert not any("attachments" in c for c in got.cells)
        theirs = {nbgrader_meta(c)["grade_id"]: c.source for c in nb.cells if nbgrader_meta(c).get("solution")}
        for cell, mine in zip(got.cells, master.cells):
            meta = nbgrader_meta(mine)
            if meta.get("solution"):
                assert cell.source == (theirs[meta["grade_id"]] if m == module else autograded.NO_ANSWER["code"])
            elif meta.get("grade"):
                assert cell.outputs == expected[(m, meta["grade_id"])]
                assert cell.source == autograded.without_hidden_tests(mine.source)
            else:
                assert cell.source == mine.source
            if cell.cell_type == "code" and not meta.get("grade"):
                assert cell.outputs == [] and cell.execution_count is None
    faked = next(c for c in nbformat.read(str(dest / f"{module}.ipynb"), as_version=4).cells
                 if nbgrader_meta(c).get("grade_id") == FAKED_CELL)
    assert [o.output_type for o in faked.outputs] == ["error"] and "CheckFailed (0/" in faked.outputs[0].traceback[0]
    answer = next(c for c in nbformat.read(str(dest / f"{module}.ipynb"), as_version=4).cells
                  if nbgrader_meta(c).get("solution"))
    assert answer.source.startswith("# </pre><script>")  # the student's answer, as source text (the page escapes it)
    assert (dest / "timestamp.txt").read_text() == STAMPS["buggy"]


def test_answers_are_found_by_grade_id_else_by_place_and_only_their_source(source, tmp_path):
    master = notebook(source, "simple_attention")
    places = [i for i, c in enumerate(master.cells) if nbgrader_meta(c).get("solution")]
    nb = student_copy(source, "simple_attention", bug=False)
    for i in places:
        nb.cells[i].source = f"answer {i}"
    path = tmp_path / "simple_attention.ipynb"
    nb.cells.reverse()  # moved about: found by grade_id
    nbformat.write(nb, str(path))
    assert autograded.student_answers(master, path) == {i: f"answer {i}" for i in places}
    nb.cells.reverse()
    for cell in nb.cells:  # every cell's metadata lost (another editor), the cells in place: found by place
        cell.metadata = {}
    nbformat.write(nb, str(path))
    assert autograded.student_answers(master, path) == {i: f"answer {i}" for i in places}
    nb.cells.pop()  # neither: no answer, and never the master's code
    nbformat.write(nb, str(path))
    assert autograded.student_answers(master, path) == {}
    built = autograded.build(master, {}, {})
    assert [built.cells[i].source for i in places] == [autograded.NO_ANSWER["code"]] * len(places)
    path.write_text("{not json")
    assert autograded.student_answers(master, path) == {}
    assert autograded.student_answers(master, tmp_path / "not-handed-in.ipynb") == {}


def test_a_markdown_answer_is_shown_as_text():
    """A student-written markdown answer cell (the course has none; nbgrader allows them) renders as text."""
    from nbconvert.filters.markdown import markdown2html  # noqa: PLC0415 - optional: Jupyter's, from the test extra

    answer = (f"My answer ``` and ````\n\n{script('plantedMarkdown')}\n[link](javascript:alert(1))\n"
              "![x](attachment:evil.png)")
    essay = v4.new_markdown_cell("The master's text", metadata={"nbgrader": {
        "grade": True, "solution": True, "locked": False, "grade_id": "essay", "points": 1, "schema_version": 3,
        "cell_type": "markdown"}})
    essay.attachments = {"evil.png": {"image/png": PNG_1X1}}
    built = autograded.build(v4.new_notebook(cells=[essay]), {0: answer}, {})
    assert "attachments" not in built.cells[0] and "master" not in built.cells[0].source
    html = markdown2html(built.cells[0].source)
    assert "<script" not in html and "<a " not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "My answer" in html


def test_the_kits_verdict_shows_a_students_words_as_text():
    """A verdict quotes what the student's code said (an exception's message): an error output, escaped."""
    from nbconvert import HTMLExporter  # noqa: PLC0415 - optional: Jupyter's, from the test extra

    said = f"your cell raised ValueError: {script('plantedVerdict')}"
    outputs = autograded.verdict_outputs({"status": "failed", "score": 0, "max_score": 1, "output": said},
                                         picture=b"\x89PNG")
    assert [o.output_type for o in outputs] == ["display_data", "error"]
    assert set(outputs[0].data) == {"image/png", "text/plain"}
    cell = v4.new_code_cell("check()")
    cell.outputs = outputs
    html, _ = HTMLExporter(template_name="classic").from_notebook_node(v4.new_notebook(cells=[cell]))
    assert "plantedVerdict" in html and "<script>window.$" not in html


def test_the_verdicts_are_the_outputs_nbformat_makes_and_written_as_nbformat_writes(source, tmp_path):
    """verdict_outputs builds without a schema check per output: the same outputs as v4.new_output (which checks
    each); an autograded notebook's file is nbformat.write's, byte for byte (the notebook is checked once, whole)."""
    picture = b"\x89PNG picture"
    passed = {"status": "passed", "score": 1, "max_score": 1}
    failed = {"status": "failed", "score": 0, "max_score": 2, "output": "wrong values\nsecond line"}
    assert autograded.verdict_outputs(passed) == [v4.new_output("stream", name="stdout", text="passed (1/1)\n")]
    error = v4.new_output("error", ename="CheckFailed", evalue="wrong values",
                          traceback=["CheckFailed (0/2)", "wrong values", "second line"])
    assert autograded.verdict_outputs(failed) == [error]
    assert autograded.verdict_outputs(failed, picture) == [v4.new_output("display_data", data={
        "image/png": base64.b64encode(picture).decode("ascii"),
        "text/plain": "expected, yours and their difference (heatmaps)"}), error]
    course = tmp_path / "course"
    shutil.copytree(source, course / "source" / ASSIGNMENT)
    verdicts = {"simple_attention": {nbgrader_meta(c)["grade_id"]: autograded.verdict_outputs(failed, picture)
                                     for c in notebook(source, "simple_attention").cells
                                     if nbgrader_meta(c).get("grade")}}
    (tmp_path / "out").mkdir()
    written = autograded.write(tmp_path / "out", course, ASSIGNMENT, tmp_path / "nothing", verdicts)
    assert written
    for path in written:
        master = nbformat.read(str(source / path.name), as_version=4)
        nb = autograded.build(master, {}, verdicts.get(path.stem, {}))
        nbformat.write(nb, str(tmp_path / "control.ipynb"))
        assert path.read_bytes() == (tmp_path / "control.ipynb").read_bytes()


@pytest.fixture(scope="module")
def empty_gradebook(tmp_path_factory) -> Path:
    """An empty gradebook, as nbgrader's ``Gradebook`` creates one (its tables, alembic's version, the course's row),
    made once: for each gradebook it creates, nbgrader runs ``alembic heads`` in a process of its own (3 to 4 CPU-s);
    the tests that need a new gradebook copy this file (new_gradebook)."""
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    path = tmp_path_factory.mktemp("empty-gradebook") / "gradebook.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")  # alembic
        with Gradebook(f"sqlite:///{path}"):
            pass
    return path


def new_gradebook(empty: Path, folder: Path) -> str:
    """``folder/gradebook.db``, a copy of the empty gradebook; its URL."""
    shutil.copyfile(empty, folder / "gradebook.db")
    return f"sqlite:///{folder / 'gradebook.db'}"


def test_the_write_back_needs_the_courses_notebooks(tmp_path, empty_gradebook):
    """autograded/ is built from source/ (or release/): without them the gradebook is not touched."""
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    with Gradebook(new_gradebook(empty_gradebook, tmp_path)) as gb:
        gb.add_assignment(ASSIGNMENT)
    with pytest.raises(nbgrader_gradebook.GradebookError, match="grade nbgrader --course"):
        nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"someone": {"tests": []}})


def test_notebooks_built_while_the_class_is_graded_reach_autograded_only_with_the_grades(source, tmp_path,
                                                                                           empty_gradebook):
    """``grade autograde --nbgrader`` builds each student's autograded/ notebooks as soon as they are graded
    (feedback_meanwhile.py), beside autograded/, and moves them in after the gradebook commit: a gradebook that refuses
    the grades (no such assignment: never generated) leaves autograded/ as it was, and nothing built is left behind;
    what a run killed meanwhile left is swept by the next. The control: with the assignment in the gradebook, they
    arrive, byte for byte the notebooks the write-back builds."""
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    from autograder.autograde import pipeline  # noqa: PLC0415 - the write-back, as grade autograde calls it
    from autograder.intake.discover import Source  # noqa: PLC0415 - the write-back, as grade autograde calls it
    from autograder.nbgrader_course.feedback_meanwhile import FeedbackMeanwhile  # noqa: PLC0415 - as above
    from autograder.outputs.results import read  # noqa: PLC0415 - the write-back, as grade autograde calls it
    from autograder.usage import UsageError  # noqa: PLC0415 - the write-back, as grade autograde calls it

    course = tmp_path / "course"
    (course / "source").mkdir(parents=True)
    shutil.copytree(source, course / "source" / ASSIGNMENT)
    submitted = course / "submitted" / "ada" / ASSIGNMENT
    submitted.mkdir(parents=True)
    module = BUG_STEP.split(".")[0]
    nbformat.write(student_copy(source, module), str(submitted / f"{module}.ipynb"))
    result = {**kit_result({BUG_STEP}), "score": 70.0}
    (tmp_path / "out" / "ada").mkdir(parents=True)
    (tmp_path / "out" / "ada" / "results.json").write_text(json.dumps(result))
    sources, url = [Source("ada", submitted)], new_gradebook(empty_gradebook, course)  # without the assignment

    def leftovers() -> list[str]:
        return [p.name for p in course.iterdir() if p.name.startswith(".grade-")]

    def killed_run() -> Path:
        """What a run killed while the class was graded leaves: a folder of its own, its lock let go of."""
        (course / ".grade-autograded").mkdir(exist_ok=True)
        made = subprocess.run([sys.executable, "-c", "import sys; from autograder.worker import tempdirs; "
                               "print(tempdirs.make('meanwhile-', base=sys.argv[1]))",
                               str(course / ".grade-autograded")],
                              cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
        assert Path(made.stdout.strip()).is_dir()
        return Path(made.stdout.strip())

    stale = killed_run()
    refused = FeedbackMeanwhile(course, sources, tmp_path / "out")
    refused.add("ada")
    assert not stale.exists()  # swept by the next run
    assert list(refused.built) == ["ada"] and leftovers() and not (course / "autograded").exists()
    with pytest.raises(UsageError, match="no assignment"):
        pipeline._to_nbgrader(course, sources, tmp_path / "out", refused)
    refused.close()
    assert not (course / "autograded").exists() and leftovers() == []
    stale = killed_run()
    FeedbackMeanwhile(course, sources, tmp_path / "out").close()  # a run that builds nothing (all resumed) sweeps too
    assert not stale.exists() and leftovers() == []

    with Gradebook(url) as gb:  # the control: the assignment, with a test cell for each of the kit's counts
        gb.add_assignment(ASSIGNMENT)
        for name in COURSE.modules:
            gb.add_notebook(name, ASSIGNMENT)
        for test in result["tests"]:
            name, cell = nbgrader_gradebook.test_cell(test["name"])
            gb.add_grade_cell(cell, name, ASSIGNMENT, max_score=test["max_score"], cell_type="code")
    taken = FeedbackMeanwhile(course, sources, tmp_path / "out")
    taken.add("ada")
    staged = (taken.staging / "ada" / ASSIGNMENT / f"{module}.ipynb").stat().st_ino
    pipeline._to_nbgrader(course, sources, tmp_path / "out", taken)
    taken.close()
    moved = course / "autograded" / "ada" / ASSIGNMENT
    as_read = read(tmp_path / "out" / "ada" / "results.json").as_json()  # what the write-back reads
    built_now = nbgrader_gradebook.feedback_notebooks(course, ASSIGNMENT, "ada", submitted, as_read,
                                                      into=tmp_path / "now")
    assert sorted(p.name for p in moved.iterdir()) == sorted(f"{m}.ipynb" for m in COURSE.modules)
    assert {p.name: p.read_bytes() for p in moved.iterdir()} == {p.name: p.read_bytes() for p in built_now.iterdir()}
    assert "forgot the 1/sqrt(d_k) scaling" in (moved / f"{module}.ipynb").read_text() and leftovers() == []
    assert (moved / f"{module}.ipynb").stat().st_ino == staged  # moved in, not built again at the write-back


#: the three warnings SQLAlchemy 2 gives while nbgrader's own ``Gradebook.add_submission`` runs (nbgrader 0.9.6)
NBGRADER_SA_WARNING = (r"Object of type <(SubmittedAssignment|SubmittedNotebook)> not in session, "
                       r"add operation along '(Student|Assignment|Notebook)\.submissions' will not proceed")


def test_the_gradebook_write_back_gives_no_warning_of_nbgraders(source, tmp_path, empty_gradebook):
    """nbgrader's own Gradebook.add_submission makes SQLAlchemy warn three times (a new submission linked before it
    is added to the session): the control, called directly. nbgrader_gradebook.write, which creates the same rows for a
    student new to the gradebook (linked by ids), gives none."""
    pytest.importorskip("nbgrader")

    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit
    from sqlalchemy.exc import SAWarning  # noqa: PLC0415 - optional: nbgrader's dependency

    (tmp_path / "source").mkdir()
    shutil.copytree(source, tmp_path / "source" / ASSIGNMENT)
    url = new_gradebook(empty_gradebook, tmp_path)
    with Gradebook(url) as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook("simple_attention", ASSIGNMENT)
        gb.add_grade_cell("test_x", "simple_attention", ASSIGNMENT, max_score=1, cell_type="code")
        with warnings.catch_warnings(record=True) as raw:
            warnings.simplefilter("always")
            gb.add_student("control")
            gb.add_submission(ASSIGNMENT, "control")
    said = [str(w.message) for w in raw if issubclass(w.category, SAWarning)]
    assert len(said) == 3 and all(re.match(NBGRADER_SA_WARNING, m) for m in said), said

    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        assert nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"someone": {"tests": []}}, db_url=url) == 0
    assert [str(w.message) for w in ours] == []
    with Gradebook(url) as gb:
        assert gb.find_submission(ASSIGNMENT, "someone")  # the gradebook is complete all the same


def small_gradebook(source: Path, folder: Path, empty: Path) -> str:
    """A gradebook of two notebooks with grade, solution and task cells (and the course's notebooks beside it, which
    the write-back wants); its URL."""
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    (folder / "source").mkdir()
    shutil.copytree(source, folder / "source" / ASSIGNMENT)
    url = new_gradebook(empty, folder)
    with Gradebook(url) as gb:
        gb.add_assignment(ASSIGNMENT)
        for nb in ("simple_attention", "causal_attention"):
            gb.add_notebook(nb, ASSIGNMENT)
            for i in (1, 2):
                gb.add_grade_cell(f"test_x_{i}", nb, ASSIGNMENT, max_score=i, cell_type="code")
            gb.add_solution_cell("x", nb, ASSIGNMENT)
            gb.add_task_cell("task", nb, ASSIGNMENT, max_score=1, cell_type="markdown")
    return url


def gradebook_rows(url: str) -> dict:
    """student -> the timestamp, grades and comments of their submission, as nbgrader's formgrader and export read
    them."""
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    with Gradebook(url) as gb:
        return {sub.student.id: (
            str(sub.timestamp),
            sorted((nb.name, g.name, g.cell_type, g.auto_score, g.manual_score, g.extra_credit, g.needs_manual_grade,
                    g.max_score, g.score) for nb in sub.notebooks for g in nb.grades),
            sorted((nb.name, c.name, c.auto_comment, c.manual_comment) for nb in sub.notebooks for c in nb.comments),
        ) for sub in gb.assignment_submissions(ASSIGNMENT)}


def test_the_write_back_creates_nbgraders_rows_in_one_commit(source, tmp_path, empty_gradebook):
    """A student new to the gradebook gets the rows nbgrader's own add_student and add_submission create (the control:
    a student added by them), and the class is written in one commit (a commit per student, and two more for each new
    one, cost a sync of the database file each: 4.8 of the 6.2 s the first write of 32 students took)."""
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit
    from sqlalchemy import event  # noqa: PLC0415 - optional: nbgrader's dependency
    from sqlalchemy.orm import Session  # noqa: PLC0415 - optional: nbgrader's dependency

    url = small_gradebook(source, tmp_path, empty_gradebook)
    stamp = "2026-12-11 20:00:00.000000 UTC"
    with Gradebook(url) as gb:
        gb.add_student("control")
        gb.add_submission(ASSIGNMENT, "control", timestamp=stamp)
    control = gradebook_rows(url)["control"]
    commits = []

    def count(session) -> None:
        commits.append(session)

    tests = [{"name": "simple_attention.x 2: t", "score": 1.5}, {"name": "causal_attention.x 1: t", "score": 0.0}]
    event.listen(Session, "after_commit", count)
    try:
        with Gradebook(url):  # opening nbgrader's Gradebook commits of its own (its course row)
            pass
        opening = len(commits)
        written = nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {
            "same": {"extra_data": {"submitted_at": stamp}},
            "graded": {"tests": tests, "extra_data": {"submitted_at": stamp}},
            "control": {"tests": tests}}, db_url=url)
    finally:
        event.remove(Session, "after_commit", count)
    assert written == 4 and len(commits) == 2 * opening + 1
    rows = gradebook_rows(url)
    assert rows["same"] == control  # no points: the rows as nbgrader's add_submission made them
    assert len(rows["same"][1]) == 6 and len(rows["same"][2]) == 4  # 4 grade cells and 2 task cells; 2 solution, 2 task
    assert rows["graded"] == rows["control"]  # the kit's points on a new submission and on nbgrader's own alike
    assert {(nb, cell): (auto, score) for nb, cell, _, auto, _, _, _, _, score in rows["graded"][1]
            if auto is not None} == {("simple_attention", "test_x_2"): (1.5, 1.5),
                                     ("causal_attention", "test_x_1"): (0.0, 0.0)}
    # a cell the kit scored needs no manual grade, as after nbgrader's own autograde; the others (the control) still do
    assert {(nb, cell): needs for nb, cell, _, auto, _, _, needs, _, _ in rows["graded"][1]} == {
        (nb, cell): (nb, cell) not in {("simple_attention", "test_x_2"), ("causal_attention", "test_x_1")}
        for nb, cell, *_ in rows["graded"][1]}


def test_the_write_back_writes_the_whole_class_or_nothing(source, tmp_path, empty_gradebook):
    """A result the gradebook has no cell for stops the write-back with nothing written, not even the students before
    it (it was committed student by student)."""
    pytest.importorskip("nbgrader")

    url = small_gradebook(source, tmp_path, empty_gradebook)
    good = {"tests": [{"name": "simple_attention.x 1: t", "score": 1.0}]}
    bad = {"tests": [{"name": "simple_attention.nothing 1: t", "score": 1.0}]}
    with pytest.raises(nbgrader_gradebook.GradebookError, match="no test cell test_nothing_1"):
        nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"a": good, "b": bad}, db_url=url)
    assert gradebook_rows(url) == {}
    assert nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"a": good, "b": good}, db_url=url) == 2
    assert set(gradebook_rows(url)) == {"a", "b"}


def test_a_regrade_keeps_a_score_a_grader_entered_by_hand(source, tmp_path, empty_gradebook):
    """An instructor overrides a test cell's points in the formgrader (a manual score), then grades the class again (a
    resubmission, an extension): the manual score stays and the cell is flagged for review, exactly as nbgrader's own
    autograde leaves it (the control: nbgrader's ``SaveAutoGrades._add_score`` on the same cells of a second student);
    a cell nobody graded by hand takes the new points and needs no review. The kit's first write-back cleared it."""
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit
    from nbgrader.preprocessors import SaveAutoGrades  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    url = small_gradebook(source, tmp_path, empty_gradebook)
    cells = {"test_x_1": ("simple_attention.x 1: t", 1), "test_x_2": ("simple_attention.x 2: t", 2)}
    nothing = {"tests": [{"name": name, "score": 0.0} for name, _ in cells.values()]}
    nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"kit": nothing, "nbgrader": nothing}, db_url=url)
    with Gradebook(url) as gb:
        for student in ("kit", "nbgrader"):
            gb.find_grade("test_x_2", "simple_attention", ASSIGNMENT, student).manual_score = 0.5
        gb.db.commit()

    full = {"tests": [{"name": name, "score": float(points)} for name, points in cells.values()]}
    nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"kit": full}, db_url=url)
    with Gradebook(url) as gb:  # nbgrader's autograde of the same cells, passing, for the other student
        saver = SaveAutoGrades()
        saver.gradebook, saver.notebook_id, saver.assignment_id, saver.student_id = \
            gb, "simple_attention", ASSIGNMENT, "nbgrader"
        for grade_id, (_, points) in cells.items():
            saver._add_score(v4.new_code_cell(metadata={"nbgrader": {
                "grade": True, "solution": False, "grade_id": grade_id, "points": points, "schema_version": 3}}), {})

    rows = gradebook_rows(url)
    kit = {cell: (auto, manual, needs, score) for nb, cell, _, auto, manual, _, needs, _, score in rows["kit"][1]
           if nb == "simple_attention" and cell in cells}
    assert kit == {"test_x_2": (2.0, 0.5, True, 0.5), "test_x_1": (1.0, None, False, 1.0)}
    assert rows["kit"][1] == rows["nbgrader"][1]

    # the student hands in no simple_attention notebook this time: nbgrader's autograde sets that notebook's grades
    # to 0 and flags none for review, a manual score or not (converters/autograde.py, "No submitted file")
    handed_in = tmp_path / "handed-in"
    handed_in.mkdir()
    (handed_in / "causal_attention.ipynb").write_text("{}")
    nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"kit": nothing}, db_url=url, submitted={"kit": handed_in})
    kit = {cell: (auto, manual, needs) for nb, cell, _, auto, manual, _, needs, _, _ in gradebook_rows(url)["kit"][1]
           if nb == "simple_attention" and cell in cells}
    assert kit == {"test_x_2": (0.0, 0.5, False), "test_x_1": (0.0, None, False)}


def test_a_solution_cell_left_as_released_is_commented_no_response_as_nbgrader_does(source, tmp_path, empty_gradebook):
    """nbgrader's autograde comments "No response." on a solution cell handed in untouched and nothing on one answered
    (``SaveAutoGrades._add_comment``: the control, run on a second student's copy of the same notebooks); the formgrader
    shows it above the answer. The kit's write-back makes the same comments, for a student new to the gradebook (rows
    the kit makes) and on a regrade once the student has answered (rows it updates). It made none before."""
    pytest.importorskip("nbgrader")
    import nbformat  # noqa: PLC0415 - optional: nbgrader's dependency
    from nbgrader import utils  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit
    from nbgrader.preprocessors import DeduplicateIds, SaveAutoGrades  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    url = small_gradebook(source, tmp_path, empty_gradebook)
    stub = "# YOUR CODE HERE\nraise NotImplementedError()"
    released = v4.new_code_cell(stub, metadata={"nbgrader": {
        "solution": True, "grade": False, "locked": False, "grade_id": "x", "schema_version": 3}})
    released.metadata.nbgrader["checksum"] = utils.compute_checksum(released)
    with Gradebook(url) as gb:
        for nb in ("simple_attention", "causal_attention"):
            gb.add_source_cell("x", nb, ASSIGNMENT, cell_type="code", source=stub, locked=False,
                               checksum=released.metadata.nbgrader["checksum"])
        gb.add_student("nbgrader")
        gb.add_submission(ASSIGNMENT, "nbgrader")

    def hand_in(folder: Path, answers: dict[str, str | tuple[str, ...]]) -> Path:
        """Each notebook's solution cell holding its answer; a tuple: the cell pasted again, one answer in each."""
        folder.mkdir(parents=True)
        for nb in ("simple_attention", "causal_attention"):
            cells = []
            for text in (lambda a: a if isinstance(a, tuple) else (a,))(answers.get(nb, stub)):
                cells.append(nbformat.from_dict(dict(released)))
                cells[-1].source = text
            nbformat.write(v4.new_notebook(cells=cells), folder / f"{nb}.ipynb")
        return folder

    # the control: nbgrader's own preprocessors, as its autograde runs them
    def nbgrader_autograde(folder: Path) -> None:
        with Gradebook(url) as gb:
            saver = SaveAutoGrades()
            saver.gradebook, saver.assignment_id, saver.student_id = gb, ASSIGNMENT, "nbgrader"
            for nb in ("simple_attention", "causal_attention"):
                saver.notebook_id = nb
                kept, _ = DeduplicateIds().preprocess(nbformat.read(folder / f"{nb}.ipynb", as_version=4), {})
                for cell in kept.cells:
                    if utils.is_solution(cell):
                        saver._add_comment(cell, {})

    def comments(student: str) -> dict:
        return {(nb, cell): auto for nb, cell, auto, _ in gradebook_rows(url)[student][2] if cell == "x"}

    first = hand_in(tmp_path / "first", {"causal_attention": "return 42"})
    nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"kit": {"tests": []}}, db_url=url, submitted={"kit": first})
    nbgrader_autograde(first)
    assert comments("kit") == {("simple_attention", "x"): "No response.", ("causal_attention", "x"): None}
    assert comments("kit") == comments("nbgrader")

    again = hand_in(tmp_path / "again", {"causal_attention": "return 42", "simple_attention": "return 7"})
    nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"kit": {"tests": []}}, db_url=url, submitted={"kit": again})
    nbgrader_autograde(again)
    assert comments("kit") == {("simple_attention", "x"): None, ("causal_attention", "x"): None}
    assert comments("kit") == comments("nbgrader")

    # a solution cell pasted again (its metadata with it): nbgrader keeps the last copy, answered or not
    pasted = hand_in(tmp_path / "pasted", {"simple_attention": (stub, "return 7"),
                                           "causal_attention": ("return 42", stub)})
    nbgrader_gradebook.write(tmp_path, ASSIGNMENT, {"kit": {"tests": []}}, db_url=url, submitted={"kit": pasted})
    nbgrader_autograde(pasted)
    assert comments("kit") == {("simple_attention", "x"): None, ("causal_attention", "x"): "No response."}
    assert comments("kit") == comments("nbgrader")


def test_the_write_back_writes_each_row_after_the_rows_it_names(source, tmp_path, empty_gradebook):
    """On a gradebook that enforces foreign keys (nbgrader's PostgreSQL and MySQL gradebooks do; SQLite here, asked
    to), a class of new and known students is written: each row goes in after the student, submission and notebook it
    names, whichever student comes first."""
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit
    from sqlalchemy import event, text  # noqa: PLC0415 - optional: nbgrader's dependency
    from sqlalchemy.engine import Engine  # noqa: PLC0415 - optional: nbgrader's dependency

    def enforce(connection, _record) -> None:
        connection.execute("PRAGMA foreign_keys=ON")

    url = small_gradebook(source, tmp_path, empty_gradebook)
    with Gradebook(url) as gb:
        gb.add_student("a-known")  # first in order: known, with no submission yet
    tests = [{"name": "simple_attention.x 1: t", "score": 1.0}]
    event.listen(Engine, "connect", enforce)
    try:
        written = nbgrader_gradebook.write(tmp_path, ASSIGNMENT,
                                           {"a-known": {"tests": tests}, "b-new": {"tests": tests}}, db_url=url)
        with Gradebook(url) as gb:
            enforced = gb.db.execute(text("PRAGMA foreign_keys")).scalar()
    finally:
        event.remove(Engine, "connect", enforce)
    assert enforced == 1 and written == 2
    assert set(gradebook_rows(url)) == {"a-known", "b-new"}


# -- nbgrader itself ------------------------------------------------------------------------------
def jupyter_env(tmp: Path) -> dict:
    """An environment where nbgrader runs the venv's Python as its "python3" kernel, and reads no
    configuration, kernel or IPython profile of the user's."""
    kernels = tmp / "jupyter-path"
    spec = kernels / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python"}))
    dirs = {name: tmp / name.lower()
            for name in ("JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR")}
    for d in dirs.values():
        d.mkdir(exist_ok=True)
    # nbgrader runs `alembic` from PATH: the venv's bin first.
    return {**os.environ, **{k: str(v) for k, v in dirs.items()}, "JUPYTER_PATH": str(kernels),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONWARNINGS": "ignore"}


def nbgrader(*args: str, cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
    result = subprocess.run([str(NBGRADER), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


#: a file beside the source notebooks, as the data file is: nbgrader must copy it to release/ and autograded/
BESIDE = "probe_data.pt"


@pytest.fixture(scope="module")
def released(course_dir, tmp_path_factory) -> tuple[Path, dict]:
    if not NBGRADER.exists():
        pytest.skip("nbgrader is not installed (pip install -e '.[test]')")
    env = jupyter_env(tmp_path_factory.mktemp("jupyter"))
    (course_dir / "source" / ASSIGNMENT / BESIDE).write_bytes(b"the master copy")
    nbgrader("generate_assignment", ASSIGNMENT, cwd=course_dir, env=env, timeout=600)
    return course_dir / "release" / ASSIGNMENT, env


def test_a_file_beside_the_notebooks_is_released(released):
    release, _ = released
    assert (release / BESIDE).read_bytes() == b"the master copy"
    assert (release / "checking_helper.py").read_bytes() == (release.parent.parent / "source" / ASSIGNMENT /
                                                             "checking_helper.py").read_bytes()


def test_the_exchange_carries_the_checking_helper_to_students_and_back(released, course_dir, tmp_path):
    """nbgrader's exchange, as on JupyterHub: release_assignment, a student's fetch_assignment and submit, then
    collect: checking_helper.py travels with the notebooks both ways (in a copy of the course)."""
    _, env = released
    course = tmp_path / "course"
    shutil.copytree(course_dir, course, ignore=shutil.ignore_patterns("submitted", "autograded", "feedback*"))
    exchange, home = tmp_path / "exchange", tmp_path / "home"
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o777)
    home.mkdir()
    where = f"--Exchange.root={exchange}"
    nbgrader("release_assignment", ASSIGNMENT, where, cwd=course, env=env, timeout=300)
    nbgrader("fetch_assignment", ASSIGNMENT, "--course", ASSIGNMENT, where, cwd=home, env=env, timeout=300)
    helper_file = (course / "source" / ASSIGNMENT / "checking_helper.py").read_bytes()
    assert (home / ASSIGNMENT / "checking_helper.py").read_bytes() == helper_file
    nbgrader("submit", ASSIGNMENT, "--course", ASSIGNMENT, where, cwd=home, env=env, timeout=300)
    nbgrader("collect", ASSIGNMENT, where, cwd=course, env=env, timeout=300)
    (collected,) = (course / "submitted").glob(f"*/{ASSIGNMENT}")
    assert (collected / "checking_helper.py").read_bytes() == helper_file
    assert sorted(p.stem for p in collected.glob("*.ipynb")) == sorted(COURSE.modules)


def test_released_notebooks_stay_small(released):
    release, _ = released
    for module in COURSE.modules:
        for cell in notebook(release, module).cells:
            if cell.cell_type == "code" and nbgrader_meta(cell).get("grade_id") != "checking_helper":
                assert len(cell.source) < 20_000, (module, nbgrader_meta(cell).get("grade_id"))
        assert (release / f"{module}.ipynb").stat().st_size < 200_000, module


def test_release_holds_no_solution_and_no_hidden_test(released, source):
    release, _ = released
    for module in COURSE.modules:
        solution_lines = set()
        for cell in notebook(source, module).cells:
            inside = False
            for line in cell.source.splitlines():
                if "### BEGIN SOLUTION" in line:
                    inside = True
                elif "### END SOLUTION" in line:
                    inside = False
                elif inside and line.strip():
                    solution_lines.add(line.strip())
        assert solution_lines
        nb = notebook(release, module)
        for cell in nb.cells:
            text = cell.source
            assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
            assert "BEGIN HIDDEN TESTS" not in text and "END HIDDEN TESTS" not in text
            if nbgrader_meta(cell).get("grade_id") != "checking_helper":  # checks.py: shares `"""` lines
                assert not solution_lines & {line.strip() for line in text.splitlines()}, (module, text[:300])
            if nbgrader_meta(cell).get("solution"):
                assert STUB in text
        hidden_only = [c for c in nb.cells if nbgrader_meta(c).get("grade") and "check_" not in c.source]
        assert hidden_only  # the randomized counts: nothing left to run before grading


#: four lines in the first solution cell that make every check_* of the kernel a no-op before each cell
PATCH_CHECKS = ("ip = get_ipython()\n"
                "def _ok(*a, **k): return None\n"
                "ip.events.register(\"pre_run_cell\", "
                "lambda *a, **k: [ip.user_ns.__setitem__(n, _ok) for n in list(ip.user_ns) "
                "if n.startswith(\"check_\")])\n")
STUDENTS = ("correct", "buggy", "stubs", "patcher")
#: when each handed in, as nbgrader's own timestamp.txt records it
STAMPS = {s: f"2026-12-1{i} 10:00:00.000000 UTC" for i, s in enumerate(STUDENTS)}


#: a checking helper whose every name is a no-op: were it used, every test cell would pass
FORGED_HELPER = """def _ok(*args, **kwargs):
    return None


check_function = check_module = check_parameters = check_raises = check_dropout = _ok
T = D = B = Digest = Gen = Holder = _ok
CheckFailed = AssertionError
"""


def submit(course_dir: Path, source: Path, release: Path) -> None:
    """submitted/<student>/<assignment>/: correct, buggy (one step), stubs (the release untouched, with a forged
    checking_helper.py beside it), and patcher (the first notebook only, the release's but for PATCH_CHECKS in its
    first solution cell: the patch works in that notebook's kernel alone, and a notebook not handed in scores 0 as
    the untouched stubs do, so the patcher's points are the same, with three kernels fewer to run)."""
    bug_name = BUG_STEP.split(".", 1)[1]
    for student in STUDENTS:
        folder = course_dir / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text(STAMPS[student])
        if student == "stubs":  # untouched notebooks, but a checking_helper.py whose checks pass everything
            (folder / "checking_helper.py").write_text(FORGED_HELPER)
        if student == "patcher":
            (folder / BESIDE).write_bytes(b"forged")
        elif student != "stubs":
            (folder / BESIDE).write_bytes((release / BESIDE).read_bytes())
        patched = False
        for module in COURSE.modules[:1] if student == "patcher" else COURSE.modules:
            nb = notebook(release, module)
            answers = {nbgrader_meta(c)["grade_id"]: c.source for c in notebook(source, module).cells
                       if nbgrader_meta(c).get("solution")}
            for cell in nb.cells:
                meta = nbgrader_meta(cell)
                if student == "patcher" and meta.get("solution") and not patched:
                    cell.source, patched = PATCH_CHECKS + cell.source, True
                if student in ("correct", "buggy") and meta.get("solution"):
                    cell.source = answers[meta["grade_id"]]
                    if student == "buggy" and meta["grade_id"] == bug_name:
                        assert BUG[0] in cell.source
                        cell.source = cell.source.replace(*BUG)
            nbformat.write(nb, str(folder / f"{module}.ipynb"))


@pytest.fixture(scope="module")
def gradebook(released, course_dir, source):
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    release, env = released
    submit(course_dir, source, release)
    nbgrader("autograde", ASSIGNMENT, cwd=course_dir, env=env, timeout=1800)
    scores = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            sub = gb.find_submission(ASSIGNMENT, student)
            lost = {g.name: g.max_score - g.score for nb in sub.notebooks for g in nb.grades if g.score < g.max_score}
            scores[student] = (sub.score, sub.max_score, lost)
    return scores


def test_autograde_uses_the_master_copy_of_a_file_beside_the_notebooks(gradebook, course_dir):
    """The data file and checking_helper.py: nbgrader autograde puts the source's copy beside each student's
    notebooks, over any a student handed in (the "stubs" student hands in no data file but a forged helper,
    "patcher" a forged data file). The stubs' forged helper would pass every cell: they get zero
    (test_nbgrader_gives_untouched_stubs_zero)."""
    helper_file = (course_dir / "source" / ASSIGNMENT / "checking_helper.py").read_bytes()
    for student in STUDENTS:
        assert (course_dir / "autograded" / student / ASSIGNMENT / BESIDE).read_bytes() == b"the master copy"
        assert (course_dir / "autograded" / student / ASSIGNMENT / "checking_helper.py").read_bytes() == helper_file
    assert (course_dir / "submitted" / "stubs" / ASSIGNMENT / "checking_helper.py").read_text() == FORGED_HELPER


def test_nbgrader_gives_the_solutions_full_marks(gradebook):
    score, top, lost = gradebook["correct"]
    assert top == COURSE.max_points()
    assert (score, lost) == (top, {})


def test_nbgrader_takes_exactly_the_buggy_steps_points(gradebook):
    score, top, lost = gradebook["buggy"]
    step = COURSE.steps[BUG_STEP]
    name = BUG_STEP.split(".", 1)[1]
    assert lost == {f"test_{name}_{c}": spec.points for c, spec in step.counts.items()}
    assert score == top - sum(spec.points for spec in step.counts.values())


def test_nbgrader_gives_untouched_stubs_zero(gradebook):
    score, top, _ = gradebook["stubs"]
    assert (score, top) == (0, COURSE.max_points())


#: the buggy student's notebooks, with ``plant`` in the buggy step's: handed in after nbgrader's own autograde
PLANTER = "planter"


def submit_planter(course_dir: Path) -> Path:
    buggy, planted = (course_dir / "submitted" / s / ASSIGNMENT for s in ("buggy", PLANTER))
    shutil.copytree(buggy, planted)
    module = BUG_STEP.split(".")[0]
    nb = notebook(planted, module)
    plant(nb)
    nbformat.write(nb, str(planted / f"{module}.ipynb"))
    return planted


@pytest.fixture(scope="module")
def sandboxed_run(gradebook, course_dir, tmp_path_factory) -> tuple[dict, subprocess.CompletedProcess]:
    """The same submitted/ graded by the kit, in its sandbox: ``grade autograde --nbgrader``; and the planter, a
    student new to the gradebook (nbgrader autograde ran before it handed in)."""
    submit_planter(course_dir)
    out = tmp_path_factory.mktemp("nbgrader-sandboxed")
    result = run_grade("autograde", "--nbgrader", str(course_dir), "--out", str(out), timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return {s: json.loads((out / s / "results.json").read_text()) for s in (*STUDENTS, PLANTER)}, result


@pytest.fixture(scope="module")
def sandboxed(sandboxed_run) -> dict:
    return sandboxed_run[0]


def test_grade_autograde_nbgrader_prints_no_warning(sandboxed_run):
    """Nothing on stderr that reads as a failure: SQLAlchemy's warnings about nbgrader's add_submission (three per
    student new to the gradebook, here the planter) are silenced (control: the unit test above)."""
    _, result = sandboxed_run
    assert "Warning" not in result.stderr and "warning" not in result.stderr.lower(), result.stderr[-3000:]
    assert f"grades of {len(STUDENTS) + 1} student(s) written to the gradebook" in result.stdout


def test_the_sandboxed_path_grades_the_honest_notebooks_as_nbgrader_does(gradebook, sandboxed):
    for student in ("correct", "buggy", "stubs"):
        assert sandboxed[student]["score"] == gradebook[student][0], student


def test_a_notebook_that_patches_the_checks_gets_nothing_through_the_sandbox(gradebook, sandboxed):
    """In nbgrader's own kernel the patch passes every test cell (documented: nbgrader autograde is unsafe for
    untrusted students); graded by the kit, the checks are not the student's to patch."""
    assert sandboxed["patcher"]["score"] == 0
    assert gradebook["patcher"][0] > 0  # what nbgrader autograde gives it: why docs/nbgrader.md warns


def test_the_course_grades_alike_on_dask(sandboxed, course_dir, tmp_path):
    """``--nbgrader`` with ``--executor dask``: the same points, times and gradebook write-back as locally."""
    pytest.importorskip("distributed", reason="the [cluster] extra (pip install -e '.[cluster]')")
    out = tmp_path / "dask"
    result = run_grade("autograde", "--nbgrader", str(course_dir), "--out", str(out), "--executor", "dask",
                       "--local-workers", "2", timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    for student in STUDENTS:
        got = json.loads((out / student / "results.json").read_text())
        assert got["score"] == sandboxed[student]["score"], student
        assert got["extra_data"]["submitted_at"] == sandboxed[student]["extra_data"]["submitted_at"], student
    assert f"grades of {len(STUDENTS) + 1} student(s) written to the gradebook" in result.stdout  # and the planter


def test_the_formgrader_lists_no_submission_as_waiting_for_manual_grading(gradebook, sandboxed, course_dir):
    """After nbgrader's own autograde no submission of this course needs a manual grade (every grade cell is a test
    cell, scored); after the kit's write-back, none does either: not the students nbgrader graded first, nor the
    planter, whose rows the kit made (the control, that a new submission's unscored cells still need one, is in
    test_the_write_back_creates_nbgraders_rows_in_one_commit)."""
    from nbgrader.api import Gradebook  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        waiting = {s: gb.find_submission(ASSIGNMENT, s).needs_manual_grade for s in (*STUDENTS, PLANTER)}
        cells = {(s, nb.name, g.name): g.needs_manual_grade for s in (*STUDENTS, PLANTER)
                 for nb in gb.find_submission(ASSIGNMENT, s).notebooks for g in nb.grades}
    assert waiting == dict.fromkeys((*STUDENTS, PLANTER), False)
    assert not any(cells.values()) and len(cells) == len(STUDENTS + (PLANTER,)) * sum(
        len(step.counts) for step in COURSE.steps.values())


def test_submission_times_are_nbgraders_own(sandboxed):
    for student, stamp in STAMPS.items():
        expected = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=timezone.utc)
        assert datetime.fromisoformat(sandboxed[student]["extra_data"]["submitted_at"]) == expected


@pytest.fixture(scope="module")
def exported(sandboxed, released, course_dir):
    """nbgrader's own export and feedback, after the kit wrote its grades into the gradebook."""
    _, env = released
    nbgrader("export", cwd=course_dir, env=env, timeout=600)
    # the pages the tests read (buggy's, correct's, the planter's): nbconvert renders each notebook of each student
    nbgrader("generate_feedback", ASSIGNMENT, "--CourseDirectory.student_id_exclude=stubs,patcher", cwd=course_dir,
             env=env, timeout=900)

    with open(course_dir / "grades.csv", newline="") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh) if r["assignment"] == ASSIGNMENT}
    return rows


def test_nbgrader_export_shows_the_kits_scores(sandboxed, exported):
    for student in STUDENTS:
        assert float(exported[student]["raw_score"]) == sandboxed[student]["score"], student
    assert float(exported["patcher"]["raw_score"]) == 0  # not what nbgrader's own kernel gave it


def test_nbgrader_feedback_carries_the_kits_words(exported, course_dir):
    page = (course_dir / "feedback" / "buggy" / ASSIGNMENT / f"{BUG_STEP.split('.')[0]}.html").read_text()
    assert "likely: forgot the 1/sqrt(d_k) scaling" in page
    assert "passed (1/1)" in page


def test_nbgrader_feedback_carries_the_pictures_of_the_kits_page(sandboxed, exported, course_dir):
    """The failing public case's heatmaps, as on the feedback page and in Gradescope's HTML, in the notebook."""
    shown = pictures(sandboxed["buggy"])
    assert shown, "the buggy step's public case fails: results.json shows its picture"
    page = (course_dir / "feedback" / "buggy" / ASSIGNMENT / f"{BUG_STEP.split('.')[0]}.html").read_text()
    flat = page.replace("\n", "")
    assert any(base64.b64encode(png).decode("ascii")[:400] in flat for png in shown.values())
    correct = (course_dir / "feedback" / "correct" / ASSIGNMENT / f"{BUG_STEP.split('.')[0]}.html").read_text()
    assert "data:image/png;base64," not in correct


#: the controls' notebooks (the buggy student's with the helper pasted in, the planter's as the kit wrote them
#: before), each in this autograded folder, rendered by one ``nbgrader generate_feedback`` into CONTROLS_FEEDBACK
CONTROLS, CONTROLS_FEEDBACK = "autograded_controls", "feedback_controls"


def helper_pasted(course_dir: Path) -> None:
    """The buggy student's autograded/ notebook of the buggy step with the helper cell as it was before (the whole
    helper pasted in): the control of one page (nbgrader renders a page for each notebook there, 1 to 2 CPU-s each
    with the helper's 200 KB of highlighted code)."""
    ours = course_dir / "autograded" / "buggy" / ASSIGNMENT
    pasted = course_dir / CONTROLS / "buggy" / ASSIGNMENT
    pasted.mkdir(parents=True)
    data = f"{ASSIGNMENT}_data.pt"
    path = ours / f"{BUG_STEP.split('.')[0]}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    steps = [s for s in COURSE.steps if s.split(".")[0] == path.stem]
    (cell,) = [c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "checking_helper"]
    # the cell: no docstring
    cell.source = notebooks.helper_source(COURSE, steps,
                                          data if (course_dir / "source" / ASSIGNMENT / data).exists()
                                          else None).split('"""', 2)[2].strip()
    nbformat.write(nb, str(pasted / path.name))
    shutil.copyfile(ours / "timestamp.txt", pasted / "timestamp.txt")


def planted_the_old_way(course_dir: Path, result: dict) -> None:
    """The planter's autograded/ notebook of the buggy step, the one its control page is read from, as the kit wrote
    it before (``old_feedback_notebook``); nbgrader renders a page for each notebook there, 1 CPU-s each."""
    submitted = course_dir / "submitted" / PLANTER / ASSIGNMENT
    old = course_dir / CONTROLS / PLANTER / ASSIGNMENT
    old.mkdir(parents=True)
    path = submitted / f"{BUG_STEP.split('.')[0]}.ipynb"
    nbformat.write(old_feedback_notebook(path, result), str(old / path.name))
    shutil.copyfile(submitted / "timestamp.txt", old / "timestamp.txt")


@pytest.fixture(scope="module")
def controls_rendered(exported, released, sandboxed, course_dir) -> Path:
    """The two controls' pages, rendered by the same ``nbgrader generate_feedback`` as the students' (one run for
    both: an nbgrader process costs 7 to 12 CPU-s)."""
    _, env = released
    helper_pasted(course_dir)
    planted_the_old_way(course_dir, sandboxed[PLANTER])
    nbgrader("generate_feedback", ASSIGNMENT, f"--CourseDirectory.autograded_directory={CONTROLS}",
             f"--CourseDirectory.feedback_directory={CONTROLS_FEEDBACK}", cwd=course_dir, env=env, timeout=900)
    return course_dir / CONTROLS_FEEDBACK


@pytest.fixture(scope="module")
def feedback_with_the_helper_pasted(controls_rendered) -> Path:
    """The control: the buggy student's page of the buggy step with the helper pasted into its cell, as before."""
    return controls_rendered / "buggy" / ASSIGNMENT


def test_the_feedback_page_is_the_students_work_not_the_helper(exported, feedback_with_the_helper_pasted, course_dir):
    """Each generate_feedback page lost the helper's rendering: some 200 KB of syntax-highlighted code the students
    never wrote. The control: the buggy step's notebook with the helper pasted into its cell, as before."""
    def as_text(html: str) -> str:
        return re.sub(r"<[^>]+>", "", html)

    for module in COURSE.modules:
        page = as_text((course_dir / "feedback" / "buggy" / ASSIGNMENT / f"{module}.html").read_text())
        assert "def check_function(" not in page and "_render_traceback_" not in page, module
    module = BUG_STEP.split(".")[0]
    page = (course_dir / "feedback" / "buggy" / ASSIGNMENT / f"{module}.html").read_text()
    before = (feedback_with_the_helper_pasted / f"{module}.html").read_text()
    assert "def check_function(" in as_text(before) and "_render_traceback_" in as_text(before)
    assert len(before) - len(page) > 150_000, (len(before), len(page))
    assert len(page) < 0.8 * len(before), (len(before), len(page))


def test_what_a_student_plants_changes_no_points(sandboxed, exported):
    assert sandboxed[PLANTER]["score"] == sandboxed["buggy"]["score"] < COURSE.max_points()
    assert float(exported[PLANTER]["raw_score"]) == sandboxed["buggy"]["score"]


@pytest.fixture(scope="module")
def feedback_the_old_way(controls_rendered) -> Path:
    """The control: the planter's pages from its notebooks as the kit wrote them before."""
    return controls_rendered / PLANTER / ASSIGNMENT


def rendered(browser, page: Path) -> dict:
    """What Chromium made of a feedback page: the marks the planted scripts left, its text, its images' alt."""
    view = browser.open(page)
    try:
        return {"marks": set(view.page.evaluate("() => Object.keys(document.body.dataset)")), "text": view.text(),
                "images": view.page.evaluate("() => Array.from(document.images).map(i => i.alt)")}
    finally:
        view.page.close()


def test_nbgrader_feedback_runs_no_script_and_shows_no_output_of_the_student(browser, exported, feedback_the_old_way,
                                                                             course_dir):
    """``nbgrader generate_feedback``'s page of a notebook with scripts, a JavaScript and an HTML output, an
    attachment and a fake "passed" under a test cell stripped of its metadata, opened in Chromium: nothing of it
    runs or shows, and the cell shows the kit's verdict. The control: the same page, built the old way, ran every
    planted script and showed the fake "passed"."""
    page = f"{BUG_STEP.split('.')[0]}.html"
    before = rendered(browser, feedback_the_old_way / page)
    assert {"plantedMarkdown", "plantedImg", "plantedJs", "plantedHtml"} <= before["marks"]
    assert FAKE in before["text"] and "PLANTED-HTML" in before["text"] and "planted" in before["images"]

    html = course_dir / "feedback" / PLANTER / ASSIGNMENT / page
    now = rendered(browser, html)
    assert now["marks"] & set(PLANTED_KEYS) == set()
    assert FAKE not in now["text"] and "PLANTED-HTML" not in now["text"] and "planted" not in now["images"]
    assert "plantedSource = '1'" in now["text"]  # the student's answer, shown as text
    assert "likely: forgot the 1/sqrt(d_k) scaling" in now["text"] and "CheckFailed (0/" in now["text"]
    source = html.read_text()
    assert [t for t in PLANTED_TEXT if t in source] == []
    assert "<script>document.body.dataset" not in source  # the answer's own script, escaped


def test_a_kernel_says_the_likely_mistake_and_the_students_own_warning(source, tmp_path, monkeypatch):
    """In a real kernel, the released notebooks with two beginners' mistakes: keys.T on a batch (CausalAttention) and
    an assert on a tuple (MultiHeadAttention). Each failing test cell says the likely line in the student's names and
    Python's or torch's warning about their cell, with its line, as grade check says them (tests/unit/test_feedback.py
    compares the words); the warnings are said once in the kernel. The control: the step's other notebook cells, with
    the solutions, pass and say no warning."""
    folder = tmp_path / "student"
    folder.mkdir()
    copy_beside(source, folder)
    said = {}
    for module, step, old, new in [
            ("causal_attention", "CausalAttention", "attn_scores = queries @ keys.transpose(1, 2)",
             "attn_scores = queries @ keys.T"),
            ("multihead_attention", "MultiHeadAttention",
             'if d_out % num_heads != 0:\n'
             '            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")',
             'assert (d_out % num_heads == 0, "d_out must be divisible by num_heads")')]:
        nb = student_copy(source, module, bug=False)
        cell = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == step)
        assert old in cell.source
        cell.source = cell.source.replace(old, new)
        ran = kernel_run(folder, nb, monkeypatch, tmp_path)
        said[module] = {nbgrader_meta(c)["grade_id"]: "\n".join(ANSI.sub("", line) for line in errors(c)[0].traceback)
                        for c in ran.cells if nbgrader_meta(c).get("grade") and errors(c)}
    causal = said["causal_attention"]
    assert set(causal) == {"test_CausalAttention_forward", "test_CausalAttention_gradients"}
    forward = causal["test_CausalAttention_forward"]
    assert "  likely: keys.T reverses every dimension of a batch ([b, num_tokens, d] becomes [d, num_tokens, b]): " \
           "transpose the last two only, keys.transpose(1, 2) (or keys.mT)" in forward
    assert re.search(r"  warning about your code: your cell, line \d+: UserWarning: The use of `x.T` on tensors of "
                     r"dimension other than 2", forward) and "      attn_scores = queries @ keys.T" in forward
    assert "warning about your code" not in causal["test_CausalAttention_gradients"]  # said once in the kernel
    mha = said["multihead_attention"]
    assert set(mha) == {"test_MultiHeadAttention_errors"}
    assert "  likely: assert (condition, message) asserts a tuple, which is always true, so it never fails" in \
        mha["test_MultiHeadAttention_errors"]
    assert re.search(r"warning about your code: your cell, line \d+: SyntaxWarning: assertion is always true",
                     mha["test_MultiHeadAttention_errors"])
