"""Hand-ins as students really hand them in: notebooks saved by JupyterLab, Colab and VS Code, folders as an LMS
exports them, ``.py`` files exported from notebooks. Written by ``write(dest)`` (``python
tests/corpus/handins/make_handins.py DEST`` writes them for a look), from the bundle's own notebooks (``grade
release``'s ``notebooks/``) filled with the reference, each with one construct of IPython or of a student's folder.

``HANDINS`` says, for each, what it holds and, where a correct hand-in cannot be graded as it was handed in, the kind
of problem it must be named under (``named``). Which steps are right is not said here: an independent checker finds it
by running the hand-in in a real kernel (``kernel_label.py``). Each construct has a control: a hand-in whose construct
hides a real mistake, which must lose the points of the steps it touches.
"""
from __future__ import annotations

import copy
import functools
import json
import shutil
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]
sys.path.insert(0, str(ROOT))

from autograder.check import public_cases  # noqa: E402 - the repository's root first
from autograder.course.sources import read_module  # noqa: E402 - the repository's root first
from autograder.release.student_notebooks import module_notebook  # noqa: E402 - the repository's root first

#: seconds the slow hand-in's training cell runs in a kernel: more than a step's time limit (course.yml: 20 s)
TRAINING_SECONDS = 25

#: name -> (what it holds, the kind of problem it must be named under where it cannot be graded as handed in)
HANDINS: dict[str, dict] = {
    "lab_control": {"about": "JupyterLab notebooks filled in, nothing else (the control of every notebook construct)"},
    "lab_magics": {"about": "%matplotlib inline, %timeit, a %%time step cell, torch.softmax?, files = !ls, display()"},
    "colab_guard": {"about": "Colab: every notebook installs under `if IN_COLAB:` with an indented `!pip install`"},
    "colab_drive_unguarded": {"about": "Colab: an unguarded `from google.colab import drive` cell, which fails on a laptop"},
    "vscode_shell_cells": {"about": "VS Code: a %%bash cell, a %%html cell and `!nvidia-smi`"},
    "lab_writefile": {"about": "a helper written with %%writefile and imported by a later cell"},
    "lab_writefile_bug": {"about": "control: the %%writefile helper forgets the sqrt(d_k) scaling"},
    "lab_input": {"about": "a top-level `input()` cell"},
    "lab_scratch_fails": {"about": "a last scratch cell that raises (`attn = book_inputs @ book_inputs`)"},
    "lab_test_cell_fails": {"about": "a leftover test cell that raises, between two steps"},
    "lab_failed_import_cell": {"about": "control: a cell fails before its own import of F, which a step uses",
                               "named": ["cell_failed"]},
    "lab_slow_cell": {"about": f"a training cell of {TRAINING_SECONDS} s in multihead_attention",
                      "named": ["timed_out"]},
    "lab_bug": {"about": "control: scaled_attention_weights forgets the sqrt(d_k) scaling"},
    "both_forms_stub_py": {"about": "the untouched .py stubs beside the worked notebooks"},
    "both_forms_stub_nb": {"about": "control: the worked .py files beside the untouched notebooks"},
    "py_absolute_siblings": {"about": ".py files importing a sibling and a helper absolutely (`from utils import`)"},
    "py_missing_helper": {"about": "control: as py_absolute_siblings, without utils.py"},
    "py_exported": {"about": "the notebooks exported by nbconvert (get_ipython() calls, a %%writefile helper)"},
    "py_causal_syntax_error": {"about": "causal_attention.py with a syntax error"},
    "py_causal_latin1": {"about": "causal_attention.py with a Latin-1 comment", "named": ["module_not_graded"]},
}


@functools.lru_cache(maxsize=1)
def _public_cases() -> dict:
    return public_cases.load()


# -- the pieces -------------------------------------------------------------------------------------------
def _reference(module: str) -> dict[str, str]:
    """The reference's definitions of ``module`` (the solution markers left out), by name."""
    pieces = read_module(ROOT / "solutions" / f"{module}.py").pieces
    return {name: "\n".join(line for line in piece.splitlines()
                            if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
            for name, piece in pieces.items()}


def _defined(source: str) -> list[str]:
    import ast  # noqa: PLC0415 - only here

    try:
        return [n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    except SyntaxError:
        return []


def bundle_cells(module: str, filled: bool = True) -> list[list[str]]:
    """The bundle's notebook of ``module`` as [kind, source] cells; ``filled``: each stub replaced by the reference
    (carried-over steps too), as a student fills it in."""
    return copy.deepcopy(_bundle_cells(module, filled))


@functools.lru_cache(maxsize=None)
def _bundle_cells(module: str, filled: bool) -> list[list[str]]:
    data = _public_cases()
    nb = module_notebook(data["title"], module, ROOT / "exercises", data["steps"])
    pieces: dict[str, str] = {}
    for other in MODULES:
        if other != module:
            pieces.update(_reference(other))
    pieces.update(_reference(module))
    cells = []
    for cell in nb.cells:
        source = cell.source
        names = _defined(source) if cell.cell_type == "code" and filled else []
        if names:
            source = "\n\n\n".join(pieces[n] for n in names)
        cells.append([cell.cell_type, source])
    return cells


def _index(cells: list[list[str]], starts: str) -> int:
    return next(i for i, (kind, source) in enumerate(cells) if kind == "code" and source.startswith(starts))


def _replace_in(cells: list[list[str]], starts: str, old: str, new: str) -> None:
    i = _index(cells, starts)
    assert old in cells[i][1], (starts, old)
    cells[i][1] = cells[i][1].replace(old, new)


# -- as each front end saves a notebook -------------------------------------------------------------------------
def _lines(source: str) -> list[str]:
    return source.splitlines(keepends=True)


def save(cells: list[list[str]], path: Path, flavour: str) -> Path:
    """Write ``cells`` as ``flavour`` (``jupyterlab``, ``colab``, ``vscode``) saves a notebook."""
    if flavour == "jupyterlab":
        data = {"cells": [{"cell_type": k, **({"execution_count": None} if k == "code" else {}),
                           "id": f"{zlib.crc32(f'{path.name}{i}'.encode()):08x}-cell", "metadata": {},
                           **({"outputs": []} if k == "code" else {}), "source": _lines(s)}
                          for i, (k, s) in enumerate(cells)],
                "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
                             "language_info": {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                                               "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                                               "pygments_lexer": "ipython3", "version": "3.11.2"}},
                "nbformat": 4, "nbformat_minor": 5}
        text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    elif flavour == "colab":
        data = {"nbformat": 4, "nbformat_minor": 0,
                "metadata": {"colab": {"provenance": [], "toc_visible": True}, "kernelspec": {"name": "python3", "display_name": "Python 3"},
                             "language_info": {"name": "python"}, "accelerator": "GPU"},
                "cells": [{"cell_type": k, "source": _lines(s), "metadata": {"id": f"c{i:03d}x{len(s) % 997:03d}"},
                           **({"execution_count": None, "outputs": []} if k == "code" else {})}
                          for i, (k, s) in enumerate(cells)]}
        text = json.dumps(data, indent=0, ensure_ascii=False)
    elif flavour == "vscode":
        data = {"cells": [{"cell_type": k, **({"execution_count": None} if k == "code" else {}), "metadata": {},
                           **({"outputs": []} if k == "code" else {}), "source": _lines(s)} for k, s in cells],
                "metadata": {"kernelspec": {"display_name": ".venv", "language": "python", "name": "python3"},
                             "language_info": {"name": "python", "version": "3.11.2"}, "orig_nbformat": 4,
                             "vscode": {"interpreter": {"hash": "4f0c7c6a5b0f9a1d"}}},
                "nbformat": 4, "nbformat_minor": 2}
        text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    else:
        raise ValueError(flavour)
    path.write_text(text, encoding="utf-8")
    return path


def _notebooks(dest: Path, flavour: str, changes=None, filled: bool = True) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        cells = bundle_cells(module, filled)
        if changes:
            changes(module, cells)
        save(cells, dest / f"{module}.ipynb", flavour)


def _py(dest: Path) -> None:
    """The reference as .py files, as a student who worked in them hands them in."""
    dest.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        text = (ROOT / "solutions" / f"{module}.py").read_text()
        (dest / f"{module}.py").write_text("".join(line for line in text.splitlines(keepends=True)
                                                   if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")))


# -- the constructs -----------------------------------------------------------------------------------------
SETUP = "# The libraries, and the inputs of the course documents"
COLAB_GUARD = "import sys\nIN_COLAB = 'google.colab' in sys.modules\nif IN_COLAB:\n    !pip install torch==2.3.0\n\n"
TRAINING = (f"# train a little, to see the heads learn\nimport time\nstarted = time.time()\nsteps = 0\n"
            f"while time.time() - started < {TRAINING_SECONDS}:\n    steps += 1\nprint(steps, 'steps')")
HELPER = ("%%writefile attn_helpers.py\nimport torch\n\n\ndef scaled_softmax(attn_scores, d_k):\n"
          "    return torch.softmax(attn_scores / d_k**0.5, dim=-1)\n")


def _magics(module, cells):
    if module != "simple_attention":
        return
    cells[_index(cells, SETUP)][1] = "%matplotlib inline\n" + cells[_index(cells, SETUP)][1]
    i = _index(cells, "def softmax_naive")
    cells[i][1] = "%%time\n" + cells[i][1]
    cells.insert(i + 1, ["code", "x = book_inputs[1] @ book_inputs[0]\n%timeit softmax_naive(book_inputs[1])\n"
                                 "torch.softmax?\nfiles = !ls\nprint(len(files), 'files')\ndisplay(softmax_naive(book_inputs[1]))"])


def _guard(module, cells):
    cells[_index(cells, SETUP)][1] = COLAB_GUARD + cells[_index(cells, SETUP)][1]


def _drive(module, cells):
    if module == "simple_attention":
        cells.insert(_index(cells, SETUP) + 1, ["code", "from google.colab import drive\ndrive.mount('/content/drive')"])


def _shell_cells(module, cells):
    if module == "causal_attention":
        at = _index(cells, SETUP) + 1
        cells[at:at] = [["code", "%%bash\necho 'checking the GPU'\nnvidia-smi || true"],
                        ["code", "%%html\n<b>Causal attention</b>"], ["code", "!nvidia-smi"]]


def _writefile(bug: bool):
    def change(module, cells):
        if module != "trainable_attention":
            return
        helper = HELPER.replace("attn_scores / d_k**0.5", "attn_scores") if bug else HELPER
        at = _index(cells, SETUP) + 1
        cells[at:at] = [["code", helper], ["code", "from attn_helpers import scaled_softmax"]]
        i = _index(cells, "def scaled_attention_weights")
        cells[i][1] = ("def scaled_attention_weights(attn_scores, d_k):\n    \"\"\"Scaled softmax, from my helper.\"\"\"\n"
                       "    return scaled_softmax(attn_scores, d_k)\n")
    return change


def _input(module, cells):
    if module == "causal_attention":
        cells.insert(_index(cells, SETUP) + 1, ["code", "name = input('Your name: ')"])


def _scratch(module, cells):
    if module == "simple_attention":
        cells.append(["code", "attn = book_inputs @ book_inputs"])


def _test_cell(module, cells):
    if module == "causal_attention":
        cells.insert(_index(cells, "def mask_and_renormalize") + 1,
                     ["code", "assert simple_causal_mask(3).sum() == 99, 'my own test, wrong'"])


def _failed_import(module, cells):
    if module == "causal_attention":
        cells.insert(_index(cells, SETUP) + 1,
                     ["code", "from google.colab import drive\nimport torch.nn.functional as F"])
        _replace_in(cells, "def causal_attention_weights", "torch.softmax(", "F.softmax(")


def _slow(module, cells):
    if module == "multihead_attention":
        cells.append(["code", TRAINING])


def _bug(module, cells):
    if module == "trainable_attention":
        _replace_in(cells, "def scaled_attention_weights", "attn_scores / d_k**0.5", "attn_scores")


def _export(notebooks: Path, dest: Path) -> None:
    """Each notebook exported to .py by nbconvert, as `jupyter nbconvert --to script` writes it."""
    import nbformat  # noqa: PLC0415 - Jupyter's, from the test extra
    from nbconvert import PythonExporter  # noqa: PLC0415 - Jupyter's, from the test extra

    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(notebooks.glob("*.ipynb")):
        body, _ = PythonExporter().from_notebook_node(nbformat.read(path, as_version=4))
        (dest / f"{path.stem}.py").write_text(body, encoding="utf-8")


def write(dest: Path) -> dict[str, Path]:
    """Every hand-in of ``HANDINS`` under ``dest``; name -> its folder."""
    dest.mkdir(parents=True, exist_ok=True)
    out = {name: dest / name for name in HANDINS}
    _notebooks(out["lab_control"], "jupyterlab")
    _notebooks(out["lab_magics"], "jupyterlab", _magics)
    _notebooks(out["colab_guard"], "colab", _guard)
    _notebooks(out["colab_drive_unguarded"], "colab", _drive)
    _notebooks(out["vscode_shell_cells"], "vscode", _shell_cells)
    _notebooks(out["lab_writefile"], "jupyterlab", _writefile(False))
    _notebooks(out["lab_writefile_bug"], "jupyterlab", _writefile(True))
    _notebooks(out["lab_input"], "jupyterlab", _input)
    _notebooks(out["lab_scratch_fails"], "jupyterlab", _scratch)
    _notebooks(out["lab_test_cell_fails"], "jupyterlab", _test_cell)
    _notebooks(out["lab_failed_import_cell"], "jupyterlab", _failed_import)
    _notebooks(out["lab_slow_cell"], "jupyterlab", _slow)
    _notebooks(out["lab_bug"], "jupyterlab", _bug)
    # both forms of each module, as an LMS exports the student's whole folder
    _notebooks(out["both_forms_stub_py"], "jupyterlab")
    for module in MODULES:
        shutil.copy(ROOT / "exercises" / f"{module}.py", out["both_forms_stub_py"] / f"{module}.py")
    _py(out["both_forms_stub_nb"])
    _notebooks(out["both_forms_stub_nb"], "jupyterlab", filled=False)
    # .py folders
    for name in ("py_absolute_siblings", "py_missing_helper"):
        _py(out[name])
        folder = out[name]
        text = (folder / "multihead_attention.py").read_text()
        (folder / "multihead_attention.py").write_text(text.replace("from .causal_attention import", "from causal_attention import"))
        text = (folder / "simple_attention.py").read_text()
        assert "return inputs @ query" in text
        text = text.replace("import torch\n", "import torch\n\nfrom utils import dot\n", 1)
        (folder / "simple_attention.py").write_text(text.replace("return inputs @ query", "return dot(inputs, query)"))
    (out["py_absolute_siblings"] / "utils.py").write_text('"""My helpers."""\n\n\ndef dot(a, b):\n    return a @ b\n')
    staging = dest / ".exported-from"
    _notebooks(staging, "jupyterlab", _writefile(False))
    _export(staging, out["py_exported"])
    shutil.rmtree(staging)
    for name in ("py_causal_syntax_error", "py_causal_latin1"):
        _py(out[name])
    path = out["py_causal_syntax_error"] / "causal_attention.py"
    path.write_text(path.read_text() + "\n\ndef plot_mask(mask:\n    pass\n")
    path = out["py_causal_latin1"] / "causal_attention.py"
    path.write_bytes(b"# Causal attention, r\xe9sum\xe9 of section 3.5\n" + path.read_bytes())
    return out


if __name__ == "__main__":
    for handin, folder in write(Path(sys.argv[1])).items():
        print(f"{handin}: {folder}  ({HANDINS[handin]['about']})")
