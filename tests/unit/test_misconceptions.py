"""Each known misconception gets its "likely:" line and its id: from the answer's values alone (``feedback.diagnose``),
from a known mistake reproduced (``unit/mistakes.py``), from torch's error and the student's line
(``feedback.runtime_errors``), or from what a module's __init__ left unregistered (``feedback.structure``); each with a
control."""
from __future__ import annotations

import pytest
import torch

from autograder.feedback.catalogue import ids_of
from autograder.feedback.compare import compare_values
from autograder.feedback.gradients import after_output
from autograder.feedback.parameters import parameter_problems
from autograder.feedback.tolerance import Tolerance
from autograder.grading.judge import judge
from autograder.unit.mistakes import dropout_place_mistakes, linear_mistakes
from autograder.feedback.redact import Hidden
from autograder.feedback.runtime_errors import error_hints
from autograder.feedback.structure import structure_hints
from autograder.worker.unregistered import unregistered

TOL = Tolerance(rtol=1e-4, atol=1e-5)


def causal(scores: torch.Tensor, diagonal: int = 1) -> torch.Tensor:
    T = scores.shape[-1]
    return torch.softmax(scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal), -torch.inf),
                         dim=-1)


def said(got, expected, mistakes=None) -> tuple[list[str], list[str]]:
    lines = compare_values(got, expected, TOL, True, "output", mistakes)
    return [line for line in lines if line.startswith("likely: ")], ids_of(lines)


SCORES = torch.randn(2, 6, 6, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("diagonal", [0], ids=["triu-diagonal-0"])
def test_a_mask_that_hides_each_token_from_itself(diagonal):
    got = causal(SCORES, diagonal).nan_to_num(0.0)
    likely, ids = said(got, causal(SCORES))
    assert ids == ["mask-hides-diagonal"]
    assert likely == ["likely: the mask also hides each token from itself (triu(..., diagonal=0) or tril(..., "
                      "diagonal=-1)): mask only the future, j > i (triu(..., diagonal=1))"]
    assert said(causal(SCORES, 1) * 0.9, causal(SCORES))[1] != ["mask-hides-diagonal"]  # control


def test_the_same_mask_with_nan_rows_is_named_too():
    assert said(causal(SCORES, 0), causal(SCORES))[1] == ["mask-hides-diagonal"]


def test_returning_the_weights_instead_of_the_context():
    likely, ids = said(causal(SCORES), torch.zeros(2, 6, 2))
    assert ids == ["returned-weights"]
    assert likely == ["likely: returned the attention weights instead of the context vectors: the output is the "
                      "weights applied to the values"]
    assert said(torch.zeros(2, 6, 3), torch.zeros(2, 6, 2))[1] == []  # control: another wrong shape says nothing


def test_a_mean_instead_of_a_sum():
    x = torch.rand(6, 3) + 0.1
    likely, ids = said(x.mean(0), x.sum(0))
    assert ids == ["mean-instead-of-sum"]
    assert likely == ["likely: your values are the expected ones times 0.1667 (= 1/6): took a mean where a sum was "
                      "expected?"]
    assert said(x.sum(0) * 0.5, x.sum(0))[1] == ["missing-scaling"]  # control: 1/2 is a scaling


def test_dividing_by_the_total_instead_of_each_rows_sum():
    w = torch.rand(6, 6) + 0.1
    likely, ids = said(w / w.sum(), w / w.sum(-1, keepdim=True))
    assert ids == ["normalized-by-total"]
    assert said(w, w / w.sum(-1, keepdim=True))[1] == ["rows-not-normalized"]  # control: not normalized at all


def test_queries_and_keys_swapped_in_a_module():
    g = torch.Generator().manual_seed(1)
    p = {f"{n}.weight": torch.rand(2, 3, generator=g) for n in ("W_query", "W_key", "W_value")}
    x = torch.rand(2, 6, 3, generator=g)
    mistakes = {label: fn(p, x) for label, fn in linear_mistakes(causal=True).items()}
    right = x @ p["W_value.weight"].T  # stands for the expected output: only the mistakes are compared
    swapped = mistakes["queries and keys swapped (keys @ queries.T)"]
    likely, ids = said(swapped, right + 1.0, mistakes)
    assert ids == ["queries-keys-swapped"] and likely == ["likely: queries and keys swapped (keys @ queries.T)"]


def test_weights_drawn_transposed():
    torch.manual_seed(123)
    expected = torch.rand(3, 2)
    torch.manual_seed(123)
    mine = torch.rand(2, 3).T
    lines = parameter_problems([("W_query", expected)], [("W_query", mine)], TOL, True)
    assert lines[-1] == ("likely: the weights are drawn transposed (torch.rand(d_out, d_in).T): draw "
                         "torch.rand(d_in, d_out), so the seeded values land where specified")
    assert ids_of(lines) == ["weights-drawn-transposed"]
    other = parameter_problems([("W_query", expected)], [("W_query", torch.randn(3, 2))], TOL, True)
    assert ids_of(other) == ["different-constructor"]  # control


def test_a_gradient_cut_on_one_path_only():
    grads = ["gradient w.r.t. x: values differ at 3 of 18 entries; first at [0, 1], largest at [0, 2]"]
    assert ids_of(after_output([], grads)) == ["gradient-cut-one-path"]
    assert ids_of(after_output(["output: values differ"], grads)) == []  # control: the output is wrong too


def test_a_mask_sliced_by_the_batch_size_is_named_from_the_error():
    x = torch.rand(2, 6, 3)
    case = {"judge": "equal", "request": {"kind": "module", "forward_args": [x]}}
    error = {"type": "RuntimeError", "message": "The size of tensor a (2) must match the size of tensor b (6) at "
             "non-singleton dimension 2", "where": {"file": "causal_attention.py", "line": 76, "function": "forward"}}
    verdict = judge(case, {}, {"ok": False, "error": error}, TOL, True)
    assert verdict.misconceptions == ["num-tokens-from-batch"]
    assert verdict.lines[-1].startswith("likely: num_tokens read from the batch dimension (x.shape[0])")
    other = {**error, "message": "The size of tensor a (3) must match the size of tensor b (6) at non-singleton "
                                 "dimension 2"}
    assert judge(case, {}, {"ok": False, "error": other}, TOL, True).misconceptions == []  # control: another mismatch


def test_heads_split_into_interleaved_columns():
    from autograder.unit.suites.test_multihead_attention import TestMultiHeadAttention, _mha  # noqa: PLC0415 - at the top, pytest would collect it

    g = torch.Generator().manual_seed(3)
    p = {f"{n}.weight": torch.rand(6, 3, generator=g) for n in ("W_query", "W_key", "W_value", "out_proj")}
    p["out_proj.weight"], p["out_proj.bias"] = torch.rand(6, 6, generator=g), torch.rand(6, generator=g)
    x = torch.rand(2, 6, 3, generator=g)
    mistakes = {label: fn(p, x) for label, fn in TestMultiHeadAttention().mistakes(heads=2).items()}
    interleaved = _mha(p, x, heads=2, layout="interleaved")
    likely, ids = said(interleaved, _mha(p, x, heads=2), mistakes)
    assert ids == ["heads-split-interleaved"] and likely[0].startswith("likely: heads split into interleaved columns")
    # control
    assert said(_mha(p, x, heads=2, scale="heads"), _mha(p, x, heads=2), mistakes)[1] == ["scaled-by-num-heads"]


def test_dropout_on_the_values_or_the_scores():
    g = torch.Generator().manual_seed(4)
    p = {f"{n}.weight": torch.rand(2, 3, generator=g) for n in ("W_query", "W_key", "W_value")}
    x = torch.rand(2, 6, 3, generator=g)
    found = {label: fn(p, x) for label, fn in dropout_place_mistakes(0.5, 2024).items()}
    values, scores, masked, diagonal = found.values()
    assert not torch.allclose(values, scores)
    assert said(values, values * 0 + 1, found)[1] == ["dropout-on-values"]
    assert said(scores, scores * 0 + 1, found)[1] == ["dropout-on-scores"]
    assert masked.isnan().any() and said(masked, values * 0 + 1, found)[1] == ["dropout-on-masked-scores"]
    assert said(diagonal, values * 0 + 1, found)[1] == ["mask-hides-diagonal"]
    state = torch.random.get_rng_state()
    dropout_place_mistakes(0.5, 7)[next(iter(found))](p, x)
    assert torch.equal(torch.random.get_rng_state(), state)  # the grader's own generator is left as it was


# -- runtime errors: torch's words kept, the likely cause added in the student's terms -------------------------------
def error_of(call) -> dict:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the error under test
        return {"type": type(exc).__name__, "message": str(exc)}
    raise AssertionError("no error")


X = torch.rand(1, 5, 3)  # the 'wars' input: 5 tokens, context_length 6


@pytest.mark.parametrize("name, error, context, mid, words", [
    ("mask not sliced", error_of(lambda: torch.zeros(1, 5, 5).masked_fill(torch.ones(6, 6).bool(), 0)),
     {"module": True, "init_args": [3, 2, 6, 0.0], "x_shape": [1, 5, 3],
      "source_line": "s = s.masked_fill(self.mask.bool(), -torch.inf)"},
     "mask-not-sliced", "slice it: self.mask.bool()[:num_tokens, :num_tokens]"),
    ("keys.T on a batch", error_of(lambda: torch.rand(2, 6, 2) @ torch.rand(2, 6, 2).permute(2, 1, 0)),
     {"module": True, "init_args": [3, 2, 6, 0.0], "x_shape": [2, 6, 3],
      "source_line": "attn_scores = queries @ keys.T"},
     "batch-transposed-with-T", "keys.T reverses every dimension of a batch"),
    ("view after a transpose", error_of(lambda: torch.rand(2, 2, 6, 2).transpose(1, 2).view(2, 6, 4)),
     {"x_shape": [2, 6, 3], "source_line": "context_vec = context_vec.view(b, num_tokens, self.d_out)"},
     "view-not-contiguous", "context_vec.contiguous().view(...)"),
    ("a Linear's weight multiplied", error_of(lambda: torch.rand(6, 3) @ torch.rand(2, 3)),
     {"x_shape": [6, 3], "source_line": "queries = x @ self.W_query.weight"},
     "linear-weight-transposed", "call the layer (self.W_query(x))"),
    ("float32 meets float64", error_of(lambda: torch.rand(3, 4) @ torch.rand(4, 5).double()),
     {"x_shape": [3, 4], "source_line": "out = x @ w"}, "mixed-dtypes", "float32 and float64 tensors meet"),
    ("a sum without keepdim", error_of(lambda: torch.rand(2, 5, 5) / torch.rand(2, 5, 5).sum(dim=-1)),
     {"x_shape": [2, 5, 5], "source_line": "return masked / masked.sum(dim=-1)"}, "sum-without-keepdim",
     "keepdim=True"),
])
def test_a_runtime_error_gets_its_likely_cause_in_the_students_terms(name, error, context, mid, words):

    [found] = error_hints(error, **context)
    assert found.mid == mid and words in found, found
    # control: the same words of torch's, without the case's sizes or the student's line that name the cause
    assert [h.mid for h in error_hints(error)] in ([], ["matmul-shapes"]) or mid in ("view-not-contiguous",
                                                                                      "mixed-dtypes")


def test_an_error_no_pattern_knows_gets_no_likely_line():

    assert error_hints({"type": "KeyError", "message": "'W_query'"}, x_shape=[2, 6, 3],
                       source_line="w = p['W_query']") == []


def test_the_mask_not_sliced_is_told_apart_from_num_tokens_read_from_the_batch():

    message = "The size of tensor a (2) must match the size of tensor b (6) at non-singleton dimension 2"
    found = error_hints({"type": "RuntimeError", "message": message}, module=True, init_args=[3, 2, 6, 0.0],
                        x_shape=[2, 6, 3])
    assert [h.mid for h in found] == ["num-tokens-from-batch"]  # {b, T}: the batch's size, not the context's


# -- a module's structure: what __init__ left unregistered -------------------------------------------------------
class PlainList(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = [torch.nn.Linear(3, 2) for _ in range(2)]
        self.W = torch.rand(3, 2, requires_grad=True)
        self.mask = torch.triu(torch.ones(6, 6), 1)


class Registered(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = torch.nn.ModuleList([torch.nn.Linear(3, 2) for _ in range(2)])
        self.all_heads = list(self.heads)  # a plain list of what is registered anyway: no mistake
        self.W = torch.nn.Parameter(torch.rand(3, 2))
        self.register_buffer("mask", torch.triu(torch.ones(6, 6), 1))


def test_unregistered_heads_tensors_and_buffers_are_named():

    found = unregistered(PlainList())
    assert [(f["name"], f["kind"]) for f in found] == [("heads", "modules"), ("W", "tensor"), ("mask", "tensor")]
    lines = structure_hints(found, True, missing_buffers=["mask"])
    assert [line.mid for line in lines] == ["modules-in-a-plain-list", "plain-tensor-attribute",
                                            "buffer-not-registered"]
    assert lines[0].startswith("likely: self.heads is a plain Python list of modules")
    assert "self.register_buffer('mask', ...)" in lines[2]
    assert unregistered(Registered()) == []  # control: registered, even when also kept in a list


def test_parameters_an_empty_list_says_why():
    class Lazy(torch.nn.Module):  # its layers made in forward: none when it is created
        def forward(self, x):
            return x

    lines = parameter_problems([("W_query.weight", torch.rand(2, 3))], [], TOL, True, unregistered=[])
    assert ids_of(lines) == ["no-parameters-at-init"]

    plain = parameter_problems([("heads.0.weight", torch.rand(2, 3))], [], TOL, True,
                               unregistered=unregistered(PlainList()))
    assert ids_of(plain) == ["modules-in-a-plain-list", "plain-tensor-attribute"]
    assert unregistered(Lazy()) == []
    assert ids_of(parameter_problems([("W", torch.rand(2))], [("V", torch.rand(2))], TOL, True)) == []  # control


def test_a_hidden_count_names_an_attribute_only_when_it_is_the_students_own():

    found = [{"name": "heads", "kind": "modules", "container": "list"}]
    assert ids_of(structure_hints(found, Hidden(names={"heads"}))) == ["modules-in-a-plain-list"]
    assert structure_hints(found, Hidden(names={"other"})) == []  # control: a name not in the student's source
