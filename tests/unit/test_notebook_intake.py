"""One notebook for every module grades as it runs in Jupyter: a later section sees what an earlier one defined.

In the kernel, cells share one namespace: the wrapper's section uses ``CausalAttention`` from the section
above it with no import. The intake gives each module the names of the sections above it, imported from
their modules (the same objects, so a stand-in still replaces a step everywhere it is bound).
"""
from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path

import pytest

from autograder.check import cells
from autograder.intake import notebook
from autograder.intake.stage import stage
from autograder.check.magic import parse

STEPS = {"causal_attention": ["CausalAttention", "simple_causal_mask"],
         "multihead_attention": ["MultiHeadAttentionWrapper", "MultiHeadAttention"]}


def _nb(path: Path, cells: list[tuple[str, str]]) -> Path:
    path.write_text(json.dumps({"cells": [{"cell_type": k, "metadata": {}, "source": s,
                                           **({"outputs": [], "execution_count": None} if k == "code" else {})}
                                          for k, s in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


CELLS = [
    ("code", "import torch"),
    ("markdown", "## causal_attention"),
    ("code", "SCALE = 2\n\nclass CausalAttention:\n    def __init__(self, n):\n        self.n = n * SCALE"),
    ("markdown", "## multihead_attention"),
    ("code", "class MultiHeadAttentionWrapper:\n    def __init__(self, k):\n"
             "        self.heads = [CausalAttention(1) for _ in range(k)]"),
]


def _import_staged(folder: Path, modules: list[str]) -> dict[str, types.ModuleType]:
    """Import the staged modules as the worker does: a package ``submission`` over the folder."""
    for name in [n for n in sys.modules if n == "submission" or n.startswith("submission.")]:
        del sys.modules[name]
    package = types.ModuleType("submission")
    package.__path__ = [str(folder)]
    sys.modules["submission"] = package
    try:
        return {m: importlib.import_module(f"submission.{m}") for m in modules}
    finally:
        for name in [n for n in sys.modules if n == "submission" or n.startswith("submission.")]:
            del sys.modules[name]


def test_a_later_section_sees_the_names_of_an_earlier_one(tmp_path):
    path = _nb(tmp_path / "attention.ipynb", CELLS)
    staging = tmp_path / "staging"
    staging.mkdir()
    staged = stage(path, "nina", staging, list(STEPS), STEPS)
    assert staged.module_errors == {}
    modules = _import_staged(staged.folder, list(STEPS))
    wrapper = modules["multihead_attention"].MultiHeadAttentionWrapper(3)  # NameError before: no CausalAttention
    assert [h.n for h in wrapper.heads] == [2, 2, 2]
    # the very object of the earlier module: a stand-in that rebinds it there rebinds it here too
    assert modules["multihead_attention"].CausalAttention is modules["causal_attention"].CausalAttention


def test_an_earlier_section_never_sees_a_later_one_nor_lends_a_step_of_the_later_module(tmp_path):
    cells = CELLS[:3] + [("code", "class MultiHeadAttention:\n    pass")] + CELLS[3:]
    sources, notes = notebook.split(_nb(tmp_path / "attention.ipynb", cells), STEPS)
    assert notes == []
    assert "from .multihead_attention" not in sources["causal_attention"]  # control: only earlier sections
    imported = [line for line in sources["multihead_attention"].splitlines() if "from .causal_attention" in line]
    assert imported == ["    from .causal_attention import SCALE, CausalAttention"]
    # a step of the later module defined in the earlier section stays there: the later one must define its own
    cells[3] = ("code", "def MultiHeadAttention():\n    pass")
    sources, _ = notebook.split(_nb(tmp_path / "attention.ipynb", cells), STEPS)
    assert "MultiHeadAttention" not in "".join(line for line in sources["multihead_attention"].splitlines()
                                              if "from .causal_attention" in line)


def test_a_section_that_does_not_run_leaves_its_names_undefined_as_in_the_kernel(tmp_path):
    cells = [CELLS[0], CELLS[1], ("code", "class CausalAttention(:\n    pass")] + CELLS[3:]
    staging = tmp_path / "staging"
    staging.mkdir()
    staged = stage(_nb(tmp_path / "attention.ipynb", cells), "nina", staging, list(STEPS), STEPS)
    folder = staged.folder
    with pytest.raises(SyntaxError):
        _import_staged(folder, ["causal_attention"])
    modules = _import_staged(folder, ["multihead_attention"])  # imports: the wrapper fails only when it runs
    with pytest.raises(NameError, match="CausalAttention"):
        modules["multihead_attention"].MultiHeadAttentionWrapper(1)


def test_a_module_notebook_carrying_a_step_over_uses_that_module_s_own(tmp_path):
    """The wrapper's own notebook defines a copy of CausalAttention to run in the kernel; as a .py file's
    ``from .causal_attention import CausalAttention`` would, the graded module uses causal_attention's."""
    folder = tmp_path / "nina"
    folder.mkdir()
    _nb(folder / "causal_attention.ipynb", [CELLS[2]])
    _nb(folder / "multihead_attention.ipynb", [("code", "class CausalAttention:\n    def __init__(self, n):\n"
                                                        "        self.n = 'copy'"), CELLS[4]])
    staging = tmp_path / "staging"
    staging.mkdir()
    staged = stage(folder, "nina", staging, list(STEPS), STEPS)
    modules = _import_staged(staged.folder, list(STEPS))
    assert [h.n for h in modules["multihead_attention"].MultiHeadAttentionWrapper(2).heads] == [2, 2]
    # control: with no causal_attention handed in, the carried copy is what runs
    (folder / "causal_attention.ipynb").unlink()
    staged = stage(folder, "nina2", staging, list(STEPS), STEPS)
    modules = _import_staged(staged.folder, ["multihead_attention"])
    assert [h.n for h in modules["multihead_attention"].MultiHeadAttentionWrapper(2).heads] == ["copy", "copy"]


def test_a_staged_line_is_named_by_its_cell(tmp_path):
    path = _nb(tmp_path / "attention.ipynb", CELLS)
    sources, _ = notebook.split(path, STEPS)
    (tmp_path / "causal_attention.py").write_text(sources["causal_attention"])
    assert cells.defined_in(tmp_path, "causal_attention.CausalAttention") == \
        "attention.ipynb, code cell 3: SCALE = 2"
    assert cells.defined_in(tmp_path, "causal_attention.simple_causal_mask") is None  # control: not defined
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "causal_attention.py").write_text("class CausalAttention:\n    pass\n")
    assert cells.defined_in(tmp_path / "plain", "causal_attention.CausalAttention") is None  # a .py file: no cell
    words = ["your code raised NameError (causal_attention.py, line 4, in <module>)"]
    assert cells.error_cell(tmp_path, "causal_attention", words).startswith("attention.ipynb, code cell 3:")


def test_the_magic_s_words():
    from autograder.check import rendered  # noqa: PLC0415 - imported on first use: torch is slow to load

    assert parse("check") == ([], None)
    assert parse("check causal_attention --html") == (["causal_attention"], "feedback.html")
    assert parse("check CausalAttention --html page.html") == (["CausalAttention"], "page.html")
    for wrong in ("", "grade", "check --json"):
        with pytest.raises(ValueError, match="usage: %grade check"):
            parse(wrong)

    class Step:
        def __init__(self, status):
            self.status, self.points, self.max_points = status, 1.0 if status == "passed" else 0.0, 1.0

    assert rendered.verdict([Step("passed")]) == "public checks passed; hidden cases are graded later (1/1)"
    assert "passed" not in rendered.verdict([Step("passed"), Step("FAILED")]).split(";")[0]
