"""No hidden deduction without a public signal: for every kind of hidden case a step has (float64,
a batch, T < context_length, T = 1, training mode with dropout, a second call), grade check has a public case of the
same kind, or the step's docstring says it plainly, or no realistic bug is known that the kind alone catches."""
from __future__ import annotations

import ast

import pytest
import torch

from autograder.course import load_course
from autograder.grading.suites.reference import Reference
from autograder.nbgrader_course.collect import collect_cases

from .conftest import ROOT

#: step -> {kind: why no public case of that kind}
EXEMPT = {
    "trainable_attention.project": {"float64": "no realistic bug returns float32 from x @ W that the public cases miss "
                                               "(a row loop into torch.zeros fails the public 1-D query case)"},
    "multihead_attention.gpt2_small_attention": {
        "train, dropout > 0": "the docstring says dropout 0.0; the forward pass needs the 2.4 M reference weights",
        "second call": "the forward pass needs the 2.4 M reference weights, not shipped"},
}


def kinds(request: dict) -> set[str]:
    """The kinds of one case: what its input and its call are like."""
    args = request.get("forward_args") or request.get("args") or []
    found = {"float64" for a in args if isinstance(a, torch.Tensor) and a.dtype == torch.float64}
    if request.get("kind") != "module" or not args:
        return found
    x, init = args[0], request.get("init_args") or []
    dropout = next((v for v in init if isinstance(v, float)), 0.0)
    if request.get("train") and dropout > 0 or request.get("train") and not init:  # GPT-2: its own dropout
        found.add("train, dropout > 0")
    if request.get("calls_before"):
        found.add("second call")
    if x.dim() == 3:
        found |= {"batch"} if x.shape[0] > 1 else set()
        found |= {"T = 1"} if x.shape[1] == 1 else set()
        if len(init) > 2 and isinstance(init[2], int) and x.shape[1] < init[2]:
            found.add("T < context_length")
    return found


def hidden_only(cases, exempt=EXEMPT) -> dict[str, set[str]]:
    seen: dict[str, dict[bool, set[str]]] = {}
    for (step, _count), group in cases.items():
        for case in group:
            seen.setdefault(step, {True: set(), False: set()})[case.public] |= kinds(case.spec["request"])
    return {step: missing for step, s in seen.items()
            if (missing := s[False] - s[True] - set(exempt.get(step, {})))}


@pytest.fixture(scope="module")
def cases():
    course = load_course(ROOT / "course.yml")
    reference = Reference(ROOT / course.solutions, course.modules, list(course.steps))
    return collect_cases(course, reference, ROOT / course.suites)


def test_every_hidden_kind_has_a_public_case(cases):
    assert hidden_only(cases) == {}


def test_without_the_training_mode_dropout_case_a_kind_is_hidden_only(cases):
    # control: the public training-mode dropout cases removed, the hidden dropout count is a kind grade check lacks
    without = {key: [c for c in group if c.spec.get("judge") != "module_dropout"] for key, group in cases.items()}
    assert hidden_only(without) == {step: {"train, dropout > 0"} for step in (
        "causal_attention.CausalAttention", "multihead_attention.MultiHeadAttentionWrapper",
        "multihead_attention.MultiHeadAttention")}
    # and every exemption is one that is needed
    assert hidden_only(cases, exempt={}) == {step: set(why) for step, why in EXEMPT.items()}


def test_the_gpt2_exemption_is_in_its_docstring():
    tree = ast.parse((ROOT / "exercises" / "multihead_attention.py").read_text())
    node = next(n for n in tree.body if getattr(n, "name", None) == "gpt2_small_attention")
    assert "dropout 0.0" in " ".join((ast.get_docstring(node) or "").split())
