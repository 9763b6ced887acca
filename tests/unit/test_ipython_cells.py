"""A notebook's cells as the kernel runs them, and a folder as Python runs it from the student's folder.

The intake runs IPython's own cell transformer (``intake/ipython_cells.py``); the sandbox's shell gives each call on
``get_ipython()`` one meaning (``worker/ipython_shell.py``); a notebook's module runs cell by cell past a failing cell,
a module that does not import gives its importers what it should have provided, and the folder's files import by
their own names (``worker/submission.py``). The whole path, in a real sandbox, is
``tests/system/test_handin_corpus.py``.
"""
from __future__ import annotations

import builtins
import json
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.check.checking import attempted_modules
from autograder.grading import failed_cells
from autograder.intake import both_forms, ipython_cells, notebook, notebook_effects, staged_cells
from autograder.worker import ipython_shell, submission

MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]


def _compiles(text: str) -> bool:
    try:
        compile(text, "cell", "exec")
    except SyntaxError:
        return False
    return True


def test_an_indented_shell_line_keeps_its_block_and_its_meaning():
    cell = "import sys\nIN_COLAB = 'google.colab' in sys.modules\nif IN_COLAB:\n    !pip install torch==2.3.0\nx = 1"
    ran = ipython_cells.transform(cell)
    assert _compiles(ran.source)
    assert "    get_ipython().system('pip install torch==2.3.0')" in ran.source.splitlines()
    assert ran.not_run == ["!pip install torch==2.3.0"]
    assert len(ran.source.splitlines()) == len(cell.splitlines())  # each line where it was: the cell's lines name it
    # control: commenting the line out, as the intake once did, leaves the `if` with no body
    assert not _compiles(cell.replace("    !pip", "    # (IPython) !pip"))


@pytest.mark.parametrize("cell, python", [
    ("files = !ls\nprint(files)", "files = get_ipython().getoutput('ls')"),
    ("torch.softmax?", "get_ipython().run_line_magic('pinfo', 'torch.softmax')"),
    ("%matplotlib inline", "get_ipython().run_line_magic('matplotlib', 'inline')"),
    ("%timeit f(x)", "get_ipython().run_line_magic('timeit', 'f(x)')"),
    ("    x = 1\n    y = x", "x = 1"),  # a cell pasted indented: the kernel runs it dedented
    (">>> x = 1\n>>> y = x", "x = 1"),  # a pasted doctest: the kernel drops the prompts
])
def test_ipython_s_syntax_becomes_calls_of_its_shell(cell, python):
    ran = ipython_cells.transform(cell)
    assert ran.source.splitlines()[0] == python and _compiles(ran.source)
    assert not _compiles(cell)  # control: as plain Python, a syntax error


def test_a_cell_is_named_by_the_line_the_student_wrote():
    cell = "%matplotlib inline\nfiles = !ls -l\n!pip install torch\ntorch.softmax?\nclass A:\n    pass"
    text = "# --- a.ipynb, code cell 4 ---\n" + ipython_cells.transform(cell).source
    staged = text.splitlines()
    assert [staged_cells.as_written(line) for line in staged[1:5]] == cell.splitlines()[:4]
    assert staged_cells.cell_at(text, 6) == "a.ipynb, code cell 4: %matplotlib inline"  # never the converted line
    assert staged_cells.place(text, 6) == "a.ipynb, code cell 4, line 5"


def test_cell_magics_are_settled_where_the_cell_s_text_is():
    timed = ipython_cells.transform("%%time\nclass A:\n    pass")
    assert timed.source.splitlines() == ["# (IPython) %%time", "class A:", "    pass"]  # the body runs, on its lines
    bash = ipython_cells.transform("%%bash\necho hi\nrm -rf /")
    assert _compiles(bash.source) and "echo" not in bash.source.replace("# (IPython) echo", "")
    assert bash.not_run == ["%%bash"]
    html = ipython_cells.transform("%%html\n<b>x</b>")
    assert _compiles(html.source) and html.not_run == []  # shows something; nothing to say
    written = ipython_cells.transform("%%writefile -a utils.py\ndef f():\n    return 1")
    assert written.written == [("utils.py", "def f():\n    return 1\n", True)] and _compiles(written.source)
    assert ipython_cells.transform("%%writefile ../outside.py\nx = 1").written == []  # no folder: not written
    # a student's line like the intake's marker is shifted, so that only the intake's lines cut the module
    assert ipython_cells.transform("# --- Step 1 ---\nx = 1").source.startswith(" # --- Step 1 ---")


def test_an_exported_notebook_s_writefile_is_read_not_run():
    text = "get_ipython().run_cell_magic('writefile', 'helpers.py', 'X = 1\\n')\nfrom helpers import X\n"
    assert ipython_cells.written_by_calls(text) == [("helpers.py", "X = 1\n", False)]
    assert ipython_cells.written_by_calls("run_cell_magic = 1") == []


@pytest.fixture
def shell():
    saved = {name: getattr(builtins, name, None) for name in ("get_ipython", "display", "input")}
    ipython_shell.install()
    yield ipython_shell.SHELL
    for name, value in saved.items():
        if value is None:
            delattr(builtins, name)
        else:
            setattr(builtins, name, value)


def test_the_grading_shell_gives_each_call_one_meaning(shell, tmp_path, capsys):
    source = textwrap.dedent("""\
        x = 3
        get_ipython().run_line_magic('time', 'y = x * 2')
        z = get_ipython().run_line_magic('time', 'x + 1')
        get_ipython().run_line_magic('timeit', '-n 10 -r 2 calls.append(1)')
        get_ipython().run_cell_magic('time', '', 'def f(a):\\n    return a + 1\\nw = f(1)\\n')
        files = get_ipython().getoutput('ls')
        shell = get_ipython().system('rm -rf /tmp/never-run')
        get_ipython().run_line_magic('matplotlib', 'inline')
        get_ipython().run_line_magic('pinfo', 'torch.softmax')
        display(x)
        colab = 'google.colab' in str(get_ipython())
        name = input('Your name: ')
        get_ipython().run_line_magic('time', '1 / 0')
        """)
    path = tmp_path / "m.py"
    path.write_text(source)
    names = {"calls": []}
    with pytest.raises(ZeroDivisionError) as raised:
        exec(compile(source, str(path), "exec"), names)  # noqa: S102 - the test's own code
    assert (names["y"], names["z"], names["w"], names["calls"]) == (6, 4, 2, [1])  # the code ran, once
    assert names["files"] == [] and names["files"].n == "" and names["shell"] is None  # not run
    assert names["colab"] is False and names["name"] == ""
    assert "Your name: " in capsys.readouterr().out
    # the error is the code's own, on the caller's line of the student's file
    frames = [f for f in __import__("traceback").extract_tb(raised.value.__traceback__) if f.filename == str(path)]
    assert frames[-1].lineno == 13


def _staged(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "staged"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def load(shell):
    """A worker's import of a staged folder, in this process; its finder and modules taken out after."""
    def forget() -> None:  # a worker imports one folder: here, each load starts as a fresh worker would
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, submission._Finder)]
        for name in [n for n in sys.modules if n == "submission" or n.startswith("submission.")
                     or n in ("causal_attention", "multihead_attention", "utils")]:
            del sys.modules[name]

    def loaded(folder: Path, notebooks=(), refused=(), standins=None) -> submission.Submission:
        forget()
        return submission.Submission(folder, MODULES, notebooks, refused, standins)

    yield loaded
    forget()


NOTEBOOK_MODULE = """# --- simple_attention.ipynb, code cell 2 ---
import math
# --- simple_attention.ipynb, code cell 3 ---
def softmax_naive(x):
    return x
# --- simple_attention.ipynb, code cell 5 ---
attn = [1, 2] @ [3]
# --- simple_attention.ipynb, code cell 6 ---
def normalize_sum(x):
    return math.fsum(x)
"""


def test_a_notebook_s_module_runs_past_a_failing_cell(load, tmp_path):
    folder = _staged(tmp_path, {"simple_attention.py": NOTEBOOK_MODULE})
    student = load(folder, notebooks=["simple_attention"])
    student.import_module("simple_attention")
    module = student.modules["simple_attention"]
    assert module.normalize_sum([1.0, 2.0]) == 3.0  # the cell after the failing one ran
    [failed] = student.cell_errors["simple_attention"]
    assert failed["type"] == "TypeError" and failed["where"]["line"] == 7
    assert staged_cells.place(NOTEBOOK_MODULE, 7) == "simple_attention.ipynb, code cell 5, line 1"
    # control: as a .py file, Python stops at the first error
    other = _staged(tmp_path / "py", {"simple_attention.py": NOTEBOOK_MODULE})
    student = load(other)
    student.import_module("simple_attention")
    assert "simple_attention" not in student.modules and student.errors["simple_attention"]["type"] == "TypeError"


def test_a_module_that_does_not_import_gives_its_importers_what_it_should_have(load, tmp_path):
    folder = _staged(tmp_path, {
        "causal_attention.py": "class CausalAttention:\n    pass\n\ndef broken(:\n    pass\n",
        "multihead_attention.py": "from .causal_attention import CausalAttention\n\ndef MultiHeadAttention():\n"
                                  "    return 'mine'\n\ndef wrapper():\n    return CausalAttention()\n"})
    held = type("CausalAttention", (), {})
    student = load(folder, standins={"causal_attention.CausalAttention": held})
    student.import_module("multihead_attention")
    assert student.errors["causal_attention"]["type"] == "SyntaxError"  # its own steps lose
    multihead = student.modules["multihead_attention"]
    assert multihead.MultiHeadAttention() == "mine" and multihead.CausalAttention is held  # the stand-in it holds
    assert "No module named" not in json.dumps(student.errors)
    # without a stand-in (grade check): a placeholder that says why when it is used
    student.standins.clear()
    sys.modules.pop("submission.multihead_attention")
    student.modules.pop("multihead_attention")
    student.import_module("multihead_attention")
    with pytest.raises(ImportError, match="causal_attention.py could not be imported, so CausalAttention"):
        student.modules["multihead_attention"].wrapper()


def test_a_folder_imports_its_siblings_and_helpers_by_name(load, tmp_path):
    folder = _staged(tmp_path, {
        "utils.py": "def dot(a, b):\n    return a * b\n",
        "causal_attention.py": "from utils import dot\n\nclass CausalAttention:\n    value = dot(2, 3)\n",
        "multihead_attention.py": "from causal_attention import CausalAttention\nhere = get_ipython() is not None\n"})
    student = load(folder)
    student.import_module("multihead_attention")
    assert student.errors == {}
    multihead, causal = student.modules["multihead_attention"], student.modules["causal_attention"]
    assert multihead.CausalAttention is causal.CausalAttention and causal.CausalAttention.value == 6  # one module
    assert sys.modules["causal_attention"] is sys.modules["submission.causal_attention"]
    assert multihead.here  # get_ipython() for a file exported from a notebook
    # a helper that is not there: the student's own words, never the kit's package name
    (folder / "utils.py").unlink()
    other = load(_staged(tmp_path / "b", {"causal_attention.py": "from .utils import dot\n"}))
    other.import_module("causal_attention")
    assert other.errors["causal_attention"]["message"] == "No module named 'utils'"


def test_staging_writes_what_writefile_wrote_and_says_what_it_did_not_run(tmp_path):
    cells_ = [("code", "%%writefile attn_helpers.py\ndef scale(x):\n    return x / 2\n"),
              ("code", "from attn_helpers import scale\n!pip install torch"), ("code", "name = input()"),
              ("code", "%%writefile causal_attention.py\nx = 1")]
    path = tmp_path / "simple_attention.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": k, "metadata": {}, "source": s, "outputs": [],
                                           "execution_count": None} for k, s in cells_],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    dest = tmp_path / "staged"
    dest.mkdir()
    (dest / "causal_attention.py").write_text("handed in")
    read = notebook.read(path)
    notes = notebook_effects.settle(dest, {"simple_attention": [path.name]}, {path.name: read}, {}, set())
    assert (dest / "attn_helpers.py").read_text() == "def scale(x):\n    return x / 2\n"
    assert (dest / "causal_attention.py").read_text() == "handed in"  # never over a file handed in
    said = "\n".join(notes)
    assert "attn_helpers.py was written by %%writefile in simple_attention.ipynb, code cell 1" in said
    assert "causal_attention.py (simple_attention.ipynb, code cell 4)" in said
    assert "simple_attention.ipynb, code cell 2: !pip install torch" in said and "code cell 3" in said
    assert notebook_effects.from_notebooks(dest) == {"simple_attention": [path.name]}


STUB = '''def f(x):
    """Doc."""
    raise NotImplementedError("not attempted yet")


class C:
    def __init__(self):
        super().__init__()
        raise NotImplementedError("not attempted yet")
'''
WORKED = "def f(x):\n    return x\n\n\nclass C:\n    def __init__(self):\n        self.x = 1\n"


def test_of_a_module_handed_in_twice_the_worked_form_is_graded():
    assert both_forms.written_steps(STUB, ["f", "C"]) == 0 and both_forms.written_steps(WORKED, ["f", "C"]) == 2
    use, note = both_forms.choose("m", STUB, WORKED, "m.ipynb", ["f", "C"])
    assert use and "m.ipynb was graded (m.ipynb writes 2 of its 2 steps, m.py 0)" in note
    assert not both_forms.choose("m", WORKED, STUB, "m.ipynb", ["f", "C"])[0]  # control: the .py file worked on
    assert not both_forms.choose("m", WORKED, WORKED, "m.ipynb", ["f", "C"])[0]  # a tie: the .py file, as before


FAILING = """# --- causal_attention.ipynb, code cell 3 ---
from google.colab import drive
import torch.nn.functional as F
# --- causal_attention.ipynb, code cell 4 ---
def causal_attention_weights(scores, d_k):
    return F.softmax(scores, dim=-1)
# --- causal_attention.ipynb, code cell 5 ---
def simple_causal_mask(n):
    return n
# --- causal_attention.ipynb, code cell 9 ---
attn = book_inputs @ book_inputs
"""


def test_a_failing_cell_is_listed_for_a_person_only_where_it_changed_a_grade():
    steps = ["simple_causal_mask", "causal_attention_weights"]
    assert failed_cells.affected(FAILING, 2, steps, {"causal_attention_weights"}) == ["causal_attention_weights"]
    assert failed_cells.affected(FAILING, 2, steps, set()) == []  # every step passed: nothing changed
    # the scratch cell at the end binds nothing a step uses
    assert failed_cells.affected(FAILING, 12, steps, {"causal_attention_weights", "simple_causal_mask"}) == []


def _write_module(folder: Path, module: str, text: str) -> None:
    (folder / f"{module}.py").write_text(text)


def test_the_magic_without_a_step_checks_the_steps_its_notebook_defines(tmp_path):
    from autograder.check import public_cases  # noqa: PLC0415 - imported on first use: torch is slow to load

    data = public_cases.load()
    for module in MODULES:
        _write_module(tmp_path, module, "import torch\n")
    # the wrapper's notebook, as the intake splits the cells a kernel ran: the carried-over CausalAttention lands in
    # causal_attention's module
    _write_module(tmp_path, "causal_attention", "class CausalAttention:\n    pass\n")
    _write_module(tmp_path, "multihead_attention", "class MultiHeadAttentionWrapper:\n    pass\n\n"
                                                   "class MultiHeadAttention:\n    pass\n")
    assert attempted_modules(tmp_path, data) == ["multihead_attention"]
    # control: one notebook for all modules checks each module it writes steps of
    _write_module(tmp_path, "causal_attention", "class CausalAttention:\n    pass\n\ndef simple_causal_mask(n):\n"
                                                "    return n\n")
    assert attempted_modules(tmp_path, data) == ["causal_attention", "multihead_attention"]
