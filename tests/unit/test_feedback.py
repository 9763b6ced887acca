"""``autograder.feedback``: the words and numbers of every grade, and the same words on every path.

The unit tests read the package's lines for typical wrong answers. The parity tests grade the same
wrong answers twice, on the cases ``grade check`` replays (``autograder/check/public_cases.json``):
through the worker's runtime and the judges, as ``grade check`` and the hidden suites do, and through a
notebook's checking helper cell and test code, as written by ``grade nbgrader`` and run in a notebook's
namespace; the messages must be equal, line for line, and a case must pass on one path exactly when it
passes on the other.
"""
from __future__ import annotations

import contextlib
import io
import math
import types
from pathlib import Path

import pytest
import torch

from autograder.course import load_course
from autograder.feedback.compare import compare_values
from autograder.feedback.diagnose import likely, likely_from_values
from autograder.feedback.dropout import dropout_problems
from autograder.feedback.gradients import GRAPH_CUT, after_output, gradient_problems
from autograder.feedback.messages import raised
from autograder.feedback.parameters import parameter_problems
from autograder.feedback.tolerance import Tolerance, same, tolerance_for_output
from autograder.grading import judge
from autograder.grading.cases import Tolerances
from autograder.outputs.verdict import StepFailure, Verdict
from autograder.nbgrader_course import graded_cells
from autograder.nbgrader_course.collect import Case
from autograder.sandbox import answers
from autograder.worker import runtime

from .conftest import ROOT

TOL = Tolerance(rtol=1e-4, atol=1e-5)
SCORES = torch.tensor([[0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
                       [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
                       [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
                       [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
                       [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
                       [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450]]) + 0.3 * torch.triu(torch.ones(6, 6), 1)
WEIGHTS = torch.softmax(SCORES / 2 ** 0.5, dim=-1)


def likely_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("likely: ")]


# -- tolerances -----------------------------------------------------------------------------------
def test_tolerance_nan_equals_nan_and_infinities_of_one_sign():
    e = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    assert TOL.close(e.clone(), e).all()
    assert not TOL.close(torch.tensor([1.0, 0.0, -float("inf"), -float("inf")]), e)[1:3].any()
    assert same(e + 1e-6, e, TOL) and not same(e + 1e-3, e, TOL)
    assert not same(torch.zeros(2, 3), torch.zeros(3, 2), TOL)


def test_an_answers_tolerance_is_float64s_when_its_output_is_float64():
    f32, f64 = Tolerance(1e-4, 1e-5), Tolerance(1e-7, 1e-9)
    assert tolerance_for_output(torch.zeros(2, dtype=torch.float64), f32, f64) == f64
    assert tolerance_for_output((torch.zeros(2, dtype=torch.float64), torch.zeros(2)), f32, f64) == f64
    assert tolerance_for_output(torch.zeros(2, dtype=torch.float64), f32, f64).lower is f32  # a float32 result's
    assert tolerance_for_output(torch.zeros(2), f32, f64) is f32
    assert tolerance_for_output(None, f32, f64) is f32


# -- comparisons ----------------------------------------------------------------------------------
def test_values_differ_where_and_by_how_much_in_the_open():
    expected = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    got = expected.clone()
    got[1, 0] = 3.5
    assert compare_values(got, expected, TOL, True, "output") == [
        "output: values differ at 1 of 4 entries; first at [1, 0], largest at [1, 0] (|difference| 0.5)",
        "  expected row [1]: [3.0000, 4.0000]",
        "  got      row [1]: [3.5000, 4.0000]",
    ]


def test_the_largest_difference_is_named_by_its_index_in_every_dimension():
    expected = torch.zeros(2, 3, 4)
    got = expected.clone()
    got[0, 0, 1] = 0.5
    got[1, 2, 3] = 2.0  # the largest, at the last entry: every dimension's index counts
    assert compare_values(got, expected, TOL, False, "output")[0] == (
        "output: values differ at 2 of 24 entries; first at [0, 0, 1], largest at [1, 2, 3]")


def test_saying_where_values_differ_loads_no_symbolic_maths():
    """``grade check`` of a failing case paid half a second for sympy (``torch.unravel_index`` imports it);
    control: ``torch.unravel_index`` itself does load it, so the check can see it."""
    import subprocess  # noqa: PLC0415 - this test's own
    import sys  # noqa: PLC0415 - this test's own

    said = ("import sys, torch\n"
            "from autograder.feedback.compare import describe_difference\n"
            "from autograder.feedback.tolerance import Tolerance\n"
            "describe_difference(torch.ones(2, 3), torch.zeros(2, 3), Tolerance(1e-4, 1e-5), True)\n"
            "print('sympy' in sys.modules)\n")
    control = "import sys, torch\ntorch.unravel_index(torch.tensor(4), (2, 3))\nprint('sympy' in sys.modules)\n"
    seen = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
            for code in (said, control)]
    assert seen == ["False", "True"]


def test_hidden_cases_show_where_but_no_value():
    got, expected = torch.zeros(3, 2), torch.ones(3, 2)
    lines = compare_values(got, expected, TOL, False, "output")
    assert lines[0] == "output: values differ at 6 of 6 entries; first at [0, 0], largest at [0, 0]"
    assert not any("row" in line or "|difference|" in line for line in lines)
    # a shape the student's code chose shows only the case's own dimensions
    assert compare_values(torch.zeros(7, 3), expected, TOL, False, "output") == [
        "output: expected shape [3, 2], got shape [?, 3]"]


def test_kind_shape_dtype_and_numbers():
    expected = torch.zeros(2, 3)
    assert compare_values(None, expected, TOL, True, "output") == [
        "output: expected a tensor of shape [2, 3], dtype float32, got None"]
    assert compare_values([1, 2], expected, TOL, True, "output") == [
        "output: expected a tensor of shape [2, 3], dtype float32, got a list of 2"]
    assert compare_values(torch.zeros(2, 3, dtype=torch.float64), expected, TOL, True, "output") == [
        "output: expected dtype float32, got float64"]
    assert compare_values(torch.zeros(2, 3, dtype=torch.int64), expected, TOL, True, "output") == [
        "output: expected dtype float32, got int64"]
    assert compare_values(2.5, 2.0, TOL, True, "variance") == ["variance: expected 2, got 2.5"]
    assert compare_values(2.5, 2.0, TOL, False, "variance") == ["variance: the number differs from the expected one"]
    assert compare_values(torch.tensor(2.0), 2.0, TOL, True, "variance") == []
    assert compare_values((torch.ones(2), torch.ones(3)), (torch.ones(2), torch.zeros(3)), TOL, True, "output")[0] \
        .startswith("output[1]: values differ at 3 of 3 entries")


# -- likely misconceptions ------------------------------------------------------------------------
def test_forgot_the_scaling_by_a_known_mistake_and_by_the_ratio():
    unscaled = torch.softmax(SCORES, dim=-1)
    lines = compare_values(unscaled, WEIGHTS, TOL, True, "output", {"forgot the 1/sqrt(d_k) scaling": unscaled})
    assert likely_lines(lines) == ["likely: forgot the 1/sqrt(d_k) scaling"]
    # scaled scores, without the known mistakes: the ratio of the values says it
    scaled = SCORES / 2 ** 0.5
    assert likely_from_values(SCORES, scaled) == [
        "your values are the expected ones times 1.414 (= sqrt(2)): a scaling by sqrt(d_k) missing, doubled, "
        "or applied the wrong way?"]


def test_softmax_over_dim_0():
    hints = likely_from_values(torch.softmax(SCORES / 2 ** 0.5, dim=0), WEIGHTS)
    assert hints == ["your columns sum to 1 instead of your rows: softmax (or the normalization) runs over the "
                     "wrong dim"]


def test_transpose_with_its_shape_or_square():
    context = torch.arange(12, dtype=torch.float32).reshape(6, 2) / 7
    lines = compare_values(context.T, context, TOL, True, "output")
    assert lines == ["output: expected shape [6, 2], got shape [2, 6]",
                     "likely: your result is the transpose of the expected one: check the order of a matrix product "
                     "or .T"]
    skewed = WEIGHTS @ torch.diag(torch.arange(1.0, 7.0))
    assert likely(skewed.T, skewed) == [
        "your result is the transpose of the expected one: check the order of a matrix product or .T"]


def test_rows_that_do_not_sum_to_1():
    assert likely_from_values(torch.exp(SCORES / 2 ** 0.5), WEIGHTS) == [
        "your rows do not sum to 1: a normalization (softmax, or renormalizing after masking) is missing"]


def test_nan_and_inf():
    nan = WEIGHTS.clone()
    nan[2, 3] = float("nan")
    lines = compare_values(nan, WEIGHTS, TOL, True, "output")
    assert lines[0].startswith("output: values differ at 1 of 36 entries; first at [2, 3], largest at [2, 3]")
    assert likely_lines(lines) == [
        "likely: your result contains NaN: 0/0 or inf/inf (an exp that overflowed), -inf times 0 (a mask or dropout "
        "multiplied into -inf scores), or a softmax over scores that are all -inf (a query that sees no key)?"]
    inf = WEIGHTS.clone()
    inf[0, 5] = -float("inf")
    assert likely_from_values(inf, WEIGHTS)[0].startswith("your result contains inf")


def test_future_tokens_not_masked():
    causal = torch.softmax(SCORES.masked_fill(torch.triu(torch.ones(6, 6, dtype=torch.bool), 1), -math.inf), dim=-1)
    assert "your result is not zero above the diagonal: future tokens are not masked out" in likely_from_values(
        WEIGHTS, causal)


# -- gradients, parameters, dropout, errors -------------------------------------------------------
def test_gradients_cut_missing_or_differing():
    assert gradient_problems("no graph", [], [], TOL, True) == [GRAPH_CUT]
    assert gradient_problems("done", [("scores", None, torch.ones(2))], [], TOL, True) == [
        "no gradient reaches scores: the graph from scores to your output is cut (.detach()? a copy through numpy "
        "or a Python list?)"]
    assert gradient_problems("done", [], [("W", "no such parameter", torch.ones(2))], TOL, True) == [
        "your module has no parameter W"]
    differing = gradient_problems("done", [("x", torch.zeros(2), torch.ones(2))], [], TOL, True)
    assert differing[0].startswith("gradient w.r.t. x: values differ at 2 of 2 entries")
    assert after_output(["output: values differ"], differing) == [
        "the gradients differ too; they follow from the output, so fix the output first"]
    assert after_output(["output: values differ"], [GRAPH_CUT]) == [GRAPH_CUT]
    assert after_output([], differing) == differing


def test_parameters_in_another_order():
    a, b = torch.rand(2, 3), torch.rand(2, 3)
    assert parameter_problems([("W_query", a), ("W_key", b)], [("W_key", b), ("W_query", a)], TOL, True) == [
        "expected parameters ['W_query', 'W_key'] (in this order), got ['W_key', 'W_query']",
        "likely: the parameters are created in a different order, so the seeded random draws land in the wrong "
        "matrices"]
    lines = parameter_problems([("W_query", a), ("W_key", b)], [("W_query", b), ("W_key", a)], TOL, True)
    assert lines[-1] == "likely: the random draws landed in other parameters: create them in the specified order"
    assert parameter_problems([("W", [768, 768])], [("W", torch.zeros(768, 2))], TOL, True, shapes_only=True,
                              expect_count=768 * 768) == [
        "parameter W: expected shape [768, 768], got [768, 2]", "expected 589,824 parameters in all, got 1,536"]


def test_dropout_by_its_properties():
    x = torch.ones(100, 100)
    assert dropout_problems(x.clone(), x, 0.5, True) == [
        "your output equals the input: dropout was not applied (eval mode? a module created with p=0?)",
        "you kept 1.000 of the entries; dropout with p=0.5 keeps about 0.500 (did you pass 1-p where p was expected?)"]
    torch.manual_seed(0)
    assert dropout_problems(torch.nn.functional.dropout(x, 0.5), x, 0.5, True) == []
    assert dropout_problems(None, x, 0.5, False) == ["expected a tensor of shape [100, 100], got None"]


def test_errors_are_redacted_on_hidden_cases():
    error = {"type": "LeakError", "message": "x = [0.1234, 0.5678]", "phase": "call"}
    assert raised(error) == ["your code raised LeakError during call: x = [0.1234, 0.5678]"]
    assert raised(error, public=False) == [
        "your code raised an exception of a class defined in your code during call: x = [#.####, #.####]"]


# -- the same words on every path -----------------------------------------------------------------
COURSE = load_course(ROOT / "course.yml")

#: multihead_attention imports CausalAttention from its package: here, from the solutions' own
MHA_IMPORT = ("from .causal_attention import CausalAttention", "from solutions.causal_attention import CausalAttention")
#: (module of solutions/, replacements in its source, the steps it breaks), one bug each
BUGS = {
    "no scaling": ("trainable_attention", [("attn_scores / d_k**0.5", "attn_scores")],
                   ["trainable_attention.scaled_attention_weights"]),
    "softmax over dim 0": ("simple_attention", [("torch.softmax(attn_scores, dim=-1)",
                                                 "torch.softmax(attn_scores, dim=0)")],
                           ["simple_attention.all_attention_weights"]),
    "transposed output": ("trainable_attention", [("        return attn_weights @ values\n",
                                                   "        return (attn_weights @ values).T\n")],
                          ["trainable_attention.SelfAttention_v1"]),
    "rows not normalized": ("simple_attention", [("torch.softmax(attn_scores, dim=-1)", "attn_scores.exp()")],
                            ["simple_attention.all_attention_weights"]),
    "NaN": ("trainable_attention", [("attn_scores / d_k**0.5", "attn_scores / (d_k - d_k)")],
            ["trainable_attention.scaled_attention_weights"]),
    "gradient cut": ("simple_attention", [("torch.softmax(attn_scores, dim=-1)",
                                           "torch.softmax(attn_scores, dim=-1).detach()")],
                     ["simple_attention.all_attention_weights"]),
    "in place": ("simple_attention", [("return scores / scores.sum()", "scores /= scores.sum()\n    return scores")],
                 ["simple_attention.normalize_sum"]),
    "parameter order": ("trainable_attention", [
        ("        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"
         "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n",
         "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
         "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n")],
        ["trainable_attention.SelfAttention_v1"]),
    "raises": ("trainable_attention", [("return torch.softmax(attn_scores / d_k**0.5, dim=-1)",
                                        "raise ValueError(f'd_k={d_k} is odd')")],
               ["trainable_attention.scaled_attention_weights"]),
    "frozen weights": ("trainable_attention", [("    W_query = nn.Parameter(torch.rand(d_in, d_out))\n",
                                                "    W_query = nn.Parameter(torch.rand(d_in, d_out), "
                                                "requires_grad=False)\n")],
                       ["trainable_attention.init_qkv"]),
    "scaled by the number of tokens": ("trainable_attention", [("attn_scores / d_k**0.5",
                                                                "attn_scores / attn_scores.shape[-1] ** 0.5")],
                                       ["trainable_attention.scaled_attention_weights"]),
    # the mistakes beginners make most: the likely line in the student's own names, and their warnings, on both paths
    "W_key not copied": ("trainable_attention", [("        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)\n", "")],
                         ["trainable_attention.transfer_weights"]),
    "float32 loop": ("simple_attention", [("    return inputs @ query\n", "    scores = torch.empty(inputs.shape[0])\n"
                                           "    for i, x_i in enumerate(inputs):\n"
                                           "        scores[i] = torch.dot(x_i, query)\n"
                                           "    return scores\n")], ["simple_attention.attention_scores"]),
    "keys.T on a batch": ("causal_attention", [("        attn_scores = queries @ keys.transpose(1, 2)\n",
                                                "        attn_scores = queries @ keys.T\n")],
                          ["causal_attention.CausalAttention"]),
    "mask not sliced": ("causal_attention", [("self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()")],
                        ["causal_attention.CausalAttention"]),
    "mask hides the diagonal": ("causal_attention", [("context_length), diagonal=1))",
                                                      "context_length), diagonal=0))")],
                                ["causal_attention.CausalAttention"]),
    "view without contiguous": ("multihead_attention", [MHA_IMPORT, ("context_vec.contiguous().view(",
                                                                     "context_vec.view(")],
                                ["multihead_attention.MultiHeadAttention"]),
    "divided by head_dim": ("multihead_attention", [MHA_IMPORT, ("attn_scores / keys.shape[-1] ** 0.5",
                                                                 "attn_scores / self.head_dim")],
                            ["multihead_attention.MultiHeadAttention"]),
    "assert on a tuple": ("multihead_attention", [MHA_IMPORT, ("""        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
""", """        assert (d_out % num_heads == 0, "d_out must be divisible by num_heads")
""")], ["multihead_attention.MultiHeadAttention"]),
    "heads in a plain list": ("multihead_attention", [MHA_IMPORT, ("""        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )""", "        self.heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) "
              "for _ in range(num_heads)]")],
        ["multihead_attention.MultiHeadAttentionWrapper"]),
}
#: a line each bug's feedback must hold on both paths (so that equal messages are not equally empty)
SAYS = {
    "no scaling": "likely: forgot the 1/sqrt(d_k) scaling",
    "frozen weights": "note (no points depend on it): output[0] is frozen (requires_grad=False)",
    "scaled by the number of tokens": "likely: scaled by sqrt(number of tokens) instead of sqrt(d_k)",
    "softmax over dim 0": "likely: softmax over dim 0 (columns) instead of the last dim",
    "transposed output": "likely: your result is the transpose of the expected one",
    "rows not normalized": "likely: your rows do not sum to 1",
    "NaN": "likely: your result contains NaN",
    "gradient cut": "the gradient was cut",
    "in place": "your code modified its input in place (scores)",
    "parameter order": "likely: the parameters are created in a different order",
    "raises": "your code raised ValueError (trainable_attention.py, line 50, in scaled_attention_weights) during "
              "call: d_k=2 is odd",
    "W_key not copied": "likely: sa_v1.W_key still holds the values it was created with",
    "float32 loop": "likely: your result is float32 for float64 inputs (its values are right)",
    "keys.T on a batch": "likely: keys.T reverses every dimension of a batch",
    "mask not sliced": "likely: the mask is not sliced to the input's length",
    "mask hides the diagonal": "likely: the mask also hides each token from itself",
    "view without contiguous": "likely: context_vec.view(...) on a tensor that is not contiguous",
    "divided by head_dim": "likely: scores divided by head_dim instead of sqrt(head_dim)",
    "assert on a tuple": "likely: assert (condition, message) asserts a tuple, which is always true",
    "heads in a plain list": "likely: self.heads is a plain Python list of modules",
}
#: a warning about the student's own line each of these bugs shows, on both paths
WARNS = {
    "keys.T on a batch": "warning about your code: causal_attention.py, line 86: UserWarning: The use of `x.T` on "
                         "tensors of dimension other than",
    "assert on a tuple": "warning about your code: multihead_attention.py, line 46: SyntaxWarning: assertion is always "
                         "true, perhaps remove parentheses?",
}


@pytest.fixture
def submission_folder(tmp_path) -> Path:
    """Where the buggy module is written, as a submission's folder: its file, read by the trusted side's own copy
    (grading/own_source.py) and by a notebook's linecache alike."""
    return tmp_path


def buggy_module(module: str, replacements: list[tuple[str, str]], folder: Path) -> tuple[types.ModuleType, list]:
    """The edited solution as a submission's module, and the warnings compiling it raised (as a worker collects them
    while importing: worker/warnings_seen.py)."""
    from autograder.worker import warnings_seen  # noqa: PLC0415 - the worker's half, here in process

    source = (ROOT / "solutions" / f"{module}.py").read_text()
    for old, new in replacements:
        assert old in source, (module, old)
        source = source.replace(old, new)
    path = folder / f"{module}.py"
    path.write_text(source)
    mod = types.ModuleType(module)
    # as a submission's file: a path inside the submission's folder, the student's frames found by it
    with warnings_seen.collecting(folder) as warned:
        code = compile(source, str(path), "exec")
    exec(code, mod.__dict__)  # noqa: S102 - the kit's own solutions, edited
    return mod, warned


@pytest.fixture(scope="module")
def public_cases():
    from autograder.check import public_cases as stored  # noqa: PLC0415 - imported on first use: safetensors, for the stored cases only

    return stored.load()


def grade_check_way(case: dict, spec: dict, module: types.ModuleType, folder: Path,
                    warned: list) -> tuple[str | None, list[str]]:
    """The feedback ``grade check`` gives (autograder/check/run.py): the worker's runtime, the answer as the trusted
    side takes it (here no buffer: the arguments' copies say what changed) and adds to it from the student's files
    (as grading/runner.py does), then the judge; and its notes. Its warnings are said with a failure (none said
    before); a passing case's wait for the count's failure (grade check), or for a failing check (a notebook)."""
    from autograder.grading.own_source import OwnSource  # noqa: PLC0415 - the trusted side's half

    ws = runtime.Workspace(folder, {module.__name__: module}, {})
    got = answers.taken(runtime.run(case["request"], ws), case["request"], None, frozenset({case["step"]}))
    own = OwnSource(folder, [module.__name__])
    own.import_warnings = own.verified(answers.warnings_said(warned))
    got = own.annotate(case["step"], got)
    t = spec["tolerance"]
    tol = Tolerances(Tolerance(*t["float32"]), Tolerance(*t["float64"])).for_answer(case["expected"])
    verdict = judge.judge(case, case["expected"], got, tol, case["public"])
    failure = None if verdict.passed else StepFailure(case["step"], case["count"], case["name"], Verdict(
        verdict.status, verdict.lines + verdict.notes + verdict.warnings)).feedback()
    return failure, [] if failure else verdict.notes


def notebook_way(case: dict, module: types.ModuleType, helper_code: types.CodeType) -> tuple[str | None, list[str]]:
    """The feedback a notebook gives: its checking helper cell (compiled) and the test code ``grade nbgrader`` writes;
    and what a passing cell printed (its notes)."""
    # its module arguments as the reference built them (nbgrader_course/collect.py: what the holders hold)
    built = iter(case.get("modules_before") or [])
    modules = {i: next(built) for i, a in enumerate(case["request"].get("args") or [])
               if isinstance(a, dict) and "$module" in a}
    test_code = "\n".join(graded_cells.case_code(Case(case["step"], case["count"], case["public"], case,
                                                      case["expected"], modules)))
    namespace: dict = {"__name__": "__main__", **{k: v for k, v in vars(module).items() if not k.startswith("__")}}
    exec(helper_code, namespace)  # noqa: S102 - our own code
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(test_code, "test_cell", "exec"), namespace)  # noqa: S102 - our own test cell
    except namespace["CheckFailed"] as exc:
        return str(exc), []
    return None, printed.getvalue().splitlines()


@pytest.mark.parametrize("public", [True, False], ids=["open", "hidden"])
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_the_same_wrong_answer_gets_the_same_words_through_grade_check_and_a_notebook(bug, public, public_cases,
                                                                                   submission_folder):
    from autograder.nbgrader_course import notebooks  # noqa: PLC0415 - imported on first use: nbformat is slow to load

    module_name, replacements, steps = BUGS[bug]
    module, warned = buggy_module(module_name, replacements, submission_folder)
    helper_code = compile(notebooks.helper_source(COURSE, steps), "checking_helper", "exec")  # run anew for each case
    compared, said = 0, []
    for case in public_cases["cases"]:
        if case["step"] not in steps:
            continue
        case = {**case, "public": public}
        checked, notes = grade_check_way(case, public_cases["steps"][case["step"]], module, submission_folder, warned)
        in_notebook, printed = notebook_way(case, module, helper_code)
        compared += 1
        # the same points: a case fails on both paths or on neither; a passing one says the same notes
        assert (in_notebook is None) == (checked is None), f"{case['step']} [{case['count']}] {case['name']}"
        assert printed == notes
        said += notes
        if checked is None:
            continue
        # the same words: the likely mistake, where the values differ, and every other line
        assert likely_lines(in_notebook.replace("\n  ", "\n").splitlines()) == likely_lines(
            checked.replace("\n  ", "\n").splitlines())
        values = [line for line in checked.splitlines()
                  if "values differ" in line or " row " in line or " values:" in line]
        assert values == [line for line in in_notebook.splitlines()
                          if "values differ" in line or " row " in line or " values:" in line]
        assert in_notebook == checked, f"{case['step']} [{case['count']}] {case['name']}"
        said += [line.strip() for line in checked.splitlines()]
    assert compared and said  # the bug was graded, and caught
    if bug in WARNS:  # the student's own warning, at its line, on both paths
        assert any(line.startswith(WARNS[bug]) for line in said), said
    if public:
        assert any(line.startswith(SAYS[bug]) for line in said), said
    else:  # a hidden case shows where values differ, never the values
        assert not any(" row " in line or " values:" in line or "|difference|" in line for line in said), [
            s for s in said if " row " in s or " values:" in s or "|difference|" in s]
