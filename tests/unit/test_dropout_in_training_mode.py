"""A module's dropout in training mode has a public case ("no hidden deduction without a public signal"):
judged by its properties, not by a seeded mask. With one token (T = 1) each head's one attention weight is 1, so
dropout on the weights leaves each head's output all zeros or the eval-mode output / (1 - p), whatever the mask."""
from __future__ import annotations

import pytest
import torch

from autograder.check.public_cases import load
from autograder.course import load_course
from autograder.feedback.dropout import module_dropout_problems
from autograder.grading.suites.reference import Reference
from autograder.nbgrader_course import cell_runner, graded_cells
from autograder.nbgrader_course.collect import collect_cases

from .conftest import CORPUS, ROOT
from tests.corpus import label

MODULE_STEPS = ["causal_attention.CausalAttention", "multihead_attention.MultiHeadAttentionWrapper",
                "multihead_attention.MultiHeadAttention"]


def causal_attention(sample: str):
    return label.load(ROOT / "solutions" if sample == "solutions"
                      else CORPUS / sample)["causal_attention"].CausalAttention


def train_and_eval(cls, p=0.5, batch=64, seed=0):
    torch.manual_seed(seed)
    module = cls(3, 2, 6, p)
    x = torch.rand(batch, 1, 3)
    with torch.no_grad():
        module.eval()
        expected = module(x)
        module.train()
        return module(x), expected


def test_dropout_on_the_weights_passes_and_dropout_elsewhere_says_where():
    assert module_dropout_problems(*train_and_eval(causal_attention("solutions")), 0.5, 1, True) == []
    scores = module_dropout_problems(*train_and_eval(causal_attention("bug_dropout_on_scores")), 0.5, 1, True)
    assert len(scores) == 2 and "your output equals the eval-mode output" in scores[0]
    assert scores[1].mid == "dropout-missing-or-on-scores" and "applied to the scores before the softmax" in scores[1]
    values = module_dropout_problems(*train_and_eval(causal_attention("bug_dropout_on_values")), 0.5, 1, True)
    assert len(values) == 2 and "neither" in values[0] and values[1].mid == "dropout-on-values"
    assert values[1].startswith("likely: dropout applied to the values")
    got, expected = train_and_eval(causal_attention("solutions"))
    unscaled = got * 0.5  # the kept weights not rescaled by 1/(1-p)
    assert "rescaled by 1/(1-p) = 2" in module_dropout_problems(unscaled, expected, 0.5, 1, True)[0]
    kept = module_dropout_problems(expected / 0.5, expected, 0.5, 1, True)  # nothing dropped, all rescaled
    assert kept == ["dropout kept 1.000 of the heads' attention weights; with p=0.5 it keeps about 0.500"]


def test_each_head_is_judged_on_its_own_columns():
    got, expected = train_and_eval(causal_attention("solutions"))
    two = torch.cat((got, torch.zeros_like(got)), dim=-1), torch.cat((expected, expected), dim=-1)
    assert module_dropout_problems(*two, 0.5, 2, True) != []  # the second head always dropped: a keep rate of 1/4
    mixed = torch.cat((got, got.flip(0)), dim=-1), torch.cat((expected, expected.flip(0)), dim=-1)
    assert module_dropout_problems(*mixed, 0.5, 2, True) == []
    assert module_dropout_problems(*mixed, 0.5, 1, True) != []  # control: as one head, half-dropped rows are neither


def test_every_module_step_has_the_case_in_its_public_forward_count():
    cases = [c for c in load()["cases"] if c.get("judge") == "module_dropout"]
    assert sorted(c["step"] for c in cases) == sorted(MODULE_STEPS)
    for case in cases:
        request = case["request"]
        assert case["count"] == "forward" and case["public"] and request["train"] and case["p"] == 0.5
        assert request["forward_args"][0].shape[1] == 1  # one token
    assert {c["step"]: c["heads"] for c in cases} == dict(zip(MODULE_STEPS, (1, 2, 2)))


@pytest.fixture(scope="module")
def cells():
    course = load_course(ROOT / "course.yml")
    reference = Reference(ROOT / course.solutions, course.modules, list(course.steps))
    found = collect_cases(course, reference, ROOT / course.suites)
    return {step: "\n".join(graded_cells.case_code(c)) for (step, count), group in found.items() if count == "forward"
            for c in group if c.spec.get("judge") == "module_dropout"}


def run_cell(code: str, target: str, obj) -> str | None:
    namespace = {name: getattr(cell_runner, name) for name in dir(cell_runner) if not name.startswith("__")}
    namespace.update(torch=torch, **{target: obj})
    try:
        exec(code, namespace)  # noqa: S102 - the kit's own generated cell
    except cell_runner.CheckFailed as failure:
        return str(failure)
    return None


def test_nbgrader_cells_judge_it_as_grade_autograde_does(cells):
    assert set(cells) == set(MODULE_STEPS) and all("dropout=(0.5, " in code for code in cells.values())
    code = cells["causal_attention.CausalAttention"]
    assert run_cell(code, "CausalAttention", causal_attention("solutions")) is None
    assert run_cell(code, "CausalAttention", causal_attention("bug_dropout_ignores_eval")) is None  # right in training
    assert "the values" in (run_cell(code, "CausalAttention", causal_attention("bug_dropout_on_values")) or "")
    mha = label.load(ROOT / "solutions")["multihead_attention"].MultiHeadAttention
    assert run_cell(cells["multihead_attention.MultiHeadAttention"], "MultiHeadAttention", mha) is None
