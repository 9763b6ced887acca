"""`grade check` takes what `grade autograde` takes: a folder, one notebook per module, one for all, a zip.

The notebooks are the runnable fixtures of ``tests/support/submission_forms.py`` (``tests/test_notebook_forms.py`` runs
them in a kernel). Every form of the same code gets the same points, step by step and count by count, from
``grade check`` and from ``grade autograde``; a notebook's failure names the cell where the step is defined.
"""
from __future__ import annotations

import json
import shutil
import zipfile

import pytest

from .conftest import ROOT, run_grade
from tests.support.submission_forms import module_notebooks, one_notebook, zipped

CAROL = ROOT / "samples" / "submissions" / "carol"  # masks after the softmax without renormalizing


def check_json(*args, cwd=ROOT):
    result = run_grade("check", "--json", *args, cwd=cwd, timeout=300)
    assert result.returncode in (0, 1), result.stderr
    return {s["step"]: {c["count"]: c["points"] for c in s["counts"]} for s in json.loads(result.stdout)["steps"]}, \
        json.loads(result.stdout)


@pytest.fixture(scope="module")
def forms(tmp_path_factory):
    root = tmp_path_factory.mktemp("forms")
    shutil.copytree(CAROL, root / "carol_py")
    return {
        "folder of .py": root / "carol_py",
        "one notebook for all": one_notebook(CAROL, root / "one", name="carol.ipynb"),
        "one notebook for all, no headings": one_notebook(CAROL, root / "plain", headings=False, name="carol.ipynb"),
        "one notebook per module": module_notebooks(CAROL, root / "carol_mods"),
        "zip": zipped(CAROL, root / "carol.zip"),
        "zip of one notebook": _zip_of(one_notebook(CAROL, root / "inzip", name="attention.ipynb"), root / "nb.zip"),
    }


def _zip_of(path, dest):
    with zipfile.ZipFile(dest, "w") as zf:
        zf.write(path, f"carol/{path.name}")
    return dest


def test_every_form_checks_as_the_py_files_do(forms):
    expected, _ = check_json(str(forms["folder of .py"]))
    assert expected["causal_attention.CausalAttention"]["forward"] == 0  # control: the bug costs points here
    assert expected["simple_attention.attention_scores"]["values"] > 0
    for form, path in forms.items():
        got, _ = check_json(str(path))
        assert got == expected, form


def test_a_module_s_own_notebook_checks_that_module(forms):
    got, data = check_json(str(forms["one notebook per module"] / "causal_attention.ipynb"))
    assert {s.split(".")[0] for s in got} == {"causal_attention"}
    assert got["causal_attention.CausalAttention"]["forward"] == 0


def test_a_notebook_s_failure_names_its_cell(forms):
    notebook = forms["one notebook for all"]
    cells = json.loads(notebook.read_text())["cells"]
    number = next(i for i, c in enumerate(cells, 1) if "".join(c["source"]).startswith("class CausalAttention("))
    result = run_grade("check", str(notebook), "--step", "CausalAttention", timeout=300)
    assert result.returncode == 1
    assert f"defined in carol.ipynb, code cell {number}: class CausalAttention(nn.Module):" in result.stdout
    assert "likely: masked after the softmax without renormalizing the rows" in result.stdout
    assert f"checking {notebook} as grade autograde takes it" in result.stderr
    # control: a folder of .py files has no cells to name
    plain = run_grade("check", str(forms["folder of .py"]), "--step", "CausalAttention", timeout=300)
    assert "likely: masked after the softmax" in plain.stdout and "defined in" not in plain.stdout


def test_a_syntax_error_names_its_cell_and_costs_only_what_the_cell_defines(tmp_path, forms):
    """As in Jupyter (and nbgrader's run): the cell with the syntax error fails, the cells around it run."""
    data = json.loads(forms["one notebook for all"].read_text())
    cells = data["cells"]
    number = next(i for i, c in enumerate(cells, 1) if "".join(c["source"]).startswith("def softmax_naive("))
    cells[number - 1]["source"] = ["def softmax_naive(x:\n", "    return x\n"]
    broken = tmp_path / "broken.ipynb"
    broken.write_text(json.dumps(data))
    result = run_grade("check", str(broken), timeout=300)
    assert result.returncode == 1
    assert f"broken.ipynb, code cell {number}, line 1 raised SyntaxError" in result.stdout
    assert f"softmax_naive is not defined: broken.ipynb, code cell {number}, line 1 raised SyntaxError" in result.stdout
    assert "does not import" not in result.stdout and "simple_attention.py" not in result.stdout
    got, _ = check_json(str(broken))
    assert sum(got["simple_attention.softmax_naive"].values()) == 0
    assert sum(got["simple_attention.attention_scores"].values()) == 2  # the cells around it ran
    assert sum(got["trainable_attention.SelfAttention_v2"].values()) == 4  # later sections still check


def test_grade_autograde_gives_each_form_the_points_of_the_py_files(forms, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for i, path in enumerate(forms.values()):
        shutil.copytree(path, subs / f"f{i}") if path.is_dir() else shutil.copy(path, subs / f"f{i}{path.suffix}")
    result = run_grade("autograde", str(subs), "--out", str(tmp_path / "results"), "--jobs", "2", timeout=900)
    assert result.returncode == 0, result.stderr
    scores = {}
    for i in range(len(forms)):
        tests = json.loads((tmp_path / "results" / f"f{i}" / "results.json").read_text())["tests"]
        scores[i] = {t["name"]: t["score"] for t in tests}
    assert 0 < sum(scores[0].values()) < sum(t["max_score"] for t in tests)  # control: carol loses points
    assert all(scores[i] == scores[0] for i in scores), [i for i in scores if scores[i] != scores[0]]
    # the hidden grading checks the wrapper beside a correct CausalAttention in every form
    assert scores[1]["multihead_attention.MultiHeadAttentionWrapper forward: Multi-head wrapper (stacked "
                     "CausalAttention heads)"] == 2


def _execute(path):
    import nbformat  # noqa: PLC0415 - imported on first use: nbformat is slow to load
    from tests.support.kernels import notebook_client  # noqa: PLC0415 - optional: Jupyter's, from the test extra

    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook_client(nb, timeout=300, kernel_name="python3",
                    resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def test_the_notebook_fixtures_run_top_to_bottom_in_a_kernel(forms, tmp_path):
    """What a student could actually have run: every form's notebooks execute in a real kernel, the wrapper's
    section building heads from the CausalAttention of the section above it. The notebook without headings differs
    from the one with them in its markdown cells only (asserted): its code cells are the ones run here."""
    one = forms["one notebook for all"]
    _execute(one)

    def cells(path, kind):
        return [c["source"] for c in json.loads(path.read_text())["cells"] if c["cell_type"] == kind]

    plain = forms["one notebook for all, no headings"]
    assert cells(plain, "code") == cells(one, "code")
    assert cells(plain, "markdown") == [] and cells(one, "markdown")  # the headings are all that differs
    for path in sorted(forms["one notebook per module"].glob("*.ipynb")):
        _execute(path)
    # the control: the old fixture kept a .py file's `from .causal_attention import`, which no kernel runs
    from nbclient.exceptions import CellExecutionError  # noqa: PLC0415 - optional: Jupyter's, from the test extra

    data = json.loads(one.read_text())
    cell = next(c for c in data["cells"] if "".join(c["source"]).startswith("class MultiHeadAttentionWrapper"))
    cell["source"] = ["from .causal_attention import CausalAttention\n"] + cell["source"]
    old = tmp_path / "old.ipynb"
    old.write_text(json.dumps(data))
    with pytest.raises(CellExecutionError, match="relative import"):
        _execute(old)
