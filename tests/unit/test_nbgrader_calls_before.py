"""nbgrader's test cells judge what grade autograde judges: the earlier calls on one instance
(calls_before) and the book's assert. The cells are written from the kit's own cases and run in process."""
from __future__ import annotations

import pytest
import torch

from autograder.course import load_course
from autograder.grading.suites.reference import Reference
from autograder.nbgrader_course import cell_runner, graded_cells
from autograder.nbgrader_course.collect import collect_cases
from solutions.multihead_attention import MultiHeadAttention

from .conftest import ROOT


@pytest.fixture(scope="module")
def cases():
    course = load_course(ROOT / "course.yml")
    reference = Reference(ROOT / course.solutions, course.modules, list(course.steps))
    return collect_cases(course, reference, ROOT / course.suites)


def _run_cell(code: str, target: str, obj) -> str | None:
    """The cell run against ``obj`` as the notebook's ``target``: None when it passes, else the failure."""
    namespace = {name: getattr(cell_runner, name) for name in dir(cell_runner) if not name.startswith("__")}
    namespace.update(torch=torch, **{target: obj})
    try:
        exec(code, namespace)  # noqa: S102 - the kit's own generated cell
    except cell_runner.CheckFailed as failure:
        return str(failure)
    return None


def _with_calls_before(cases, step):
    found = [c for (s, _count), group in cases.items() if s == step for c in group
             if c.spec["request"].get("calls_before") and c.spec["request"].get("load_params")]
    assert found, f"no case of {step} makes earlier calls"
    return found[0]


def _mha_caching_keys():
    class Caching(MultiHeadAttention):
        def forward(self, x):
            if getattr(self, "_x", None) is None:
                self._x = x  # the first call's input, used on every later one
            return super().forward(self._x)
    return MultiHeadAttention, Caching


def test_a_cell_makes_the_earlier_calls_autograde_makes(cases):
    case = _with_calls_before(cases, "multihead_attention.MultiHeadAttention")
    code = "\n".join(graded_cells.case_code(case))
    assert "before=[" in code
    honest, caching = _mha_caching_keys()
    assert _run_cell(code, "MultiHeadAttention", honest) is None
    failure = _run_cell(code, "MultiHeadAttention", caching)
    assert failure is not None and "failed" in failure
    # control: the same cell without its earlier calls cannot tell the caching module from the honest one
    request = {k: v for k, v in case.spec["request"].items() if k != "calls_before"}
    single = "\n".join(graded_cells.case_code(type(case)(case.step, case.count, case.public,
                                                         {**case.spec, "request": request}, case.expected,
                                                         case.modules)))
    assert "before=" not in single
    assert _run_cell(single, "MultiHeadAttention", caching) is None


def test_the_books_assert_passes_a_cell_that_asks_for_valueerror(cases):
    group = cases[("multihead_attention.MultiHeadAttention", "errors")]
    code = "\n".join(line for c in group for line in graded_cells.case_code(c))
    assert "also_accepted=['AssertionError']" in code

    class Asserting(torch.nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__()
            assert d_out % num_heads == 0, "d_out must be divisible by num_heads"

    class Typed(Asserting):
        def __init__(self, *args, **kwargs):
            raise TypeError("no")

    assert _run_cell(code, "MultiHeadAttention", Asserting) is None
    assert "TypeError" in (_run_cell(code, "MultiHeadAttention", Typed) or "")  # control: another exception fails
