"""Judge a worker's answer against the expected answer for one case.

Judges are named so that recorded public cases (``grade check``) and live hidden cases use the same
code: ``equal`` (outputs, and gradients when the case has an upstream gradient), ``parameters``
(parameters drawn after seeding), ``raises``, ``dropout`` (the properties of dropout), ``module_dropout`` (a module's dropout in training mode, by
its properties).

What a judge says comes from ``autograder.feedback``, which the nbgrader notebooks carry too: a judge
only unpacks the worker's answer (its facts, its gradients, what its arguments were after the call).
"""
from __future__ import annotations

import re

import torch

from autograder.feedback import messages
from autograder.feedback.catalogue import hint, likely_line
from autograder.feedback.compare import compare_values
from autograder.feedback.dropout import dropout_problems, module_dropout_problems
from autograder.feedback.gradients import NO_SUCH_PARAMETER, after_output, gradient_problems
from autograder.feedback.parameters import parameter_problems

from autograder.feedback.tolerance import Tolerance
from autograder.outputs.verdict import FAILED, NOT_ATTEMPTED, PASSED, Verdict

__all__ = ["JUDGES", "compare_values", "describe_error", "error_verdict", "judge", "judge_dropout", "judge_equal", "judge_module_dropout",
           "judge_parameters", "judge_raises", "mutated"]


def describe_error(error: dict, public: bool = True) -> list[str]:
    return messages.raised(error, public)


def error_verdict(got: dict, public: bool = True) -> Verdict:
    error = got["error"]
    if error.get("not_attempted"):
        return Verdict(NOT_ATTEMPTED, [messages.NOT_ATTEMPTED])
    return Verdict(FAILED, describe_error(error, public))


def _gradient_problems(got: dict, expected: dict, tol: Tolerance, public: bool, arg_names: list[str]) -> list[str]:
    if expected.get("backward") != "done":
        return []
    inputs = []
    for key, exp in (expected.get("input_grads") or {}).items():
        name = arg_names[int(key)] if int(key) < len(arg_names) else f"argument {key}"
        inputs.append((name, (got.get("input_grads") or {}).get(key), exp))
    params = [(name, (got.get("param_grads") or {}).get(name, NO_SUCH_PARAMETER), exp)
              for name, exp in (expected.get("param_grads") or {}).items()]
    return gradient_problems(got.get("backward"), inputs, params, tol, public)


def mutated(case: dict, got: dict) -> list[int]:
    """The arguments the student's code modified in place: what came back after the call, compared here
    with what was sent (the worker's own word on it could be forged)."""
    request = case.get("request", {})
    sent = request.get("forward_args") if request.get("kind") == "module" else request.get("args")
    after = got.get("args_after")
    if not isinstance(sent, (list, tuple)) or not isinstance(after, (list, tuple)):
        return []
    changed = []
    for i, before in enumerate(sent):
        if not isinstance(before, torch.Tensor):
            continue
        now = after[i] if i < len(after) else None  # a worker says every argument: one it leaves out counts as changed
        if not isinstance(now, torch.Tensor) or now.shape != before.shape or now.dtype != before.dtype:
            changed.append(i)
        elif not torch.equal(now, before) and not bool(((now == before) | (now.isnan() & before.isnan())).all()):
            changed.append(i)
    return changed


def judge_equal(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    lines: list[str] = []
    for field in case.get("fields", ["output"]):
        if field == "output":
            lines += compare_values(got.get("output"), expected.get("output"), tol, public, "output", case.get("mistakes"))
        else:
            lines += compare_values(got.get(field), expected.get(field), tol, public, field.replace("_", " "))
    facts_e, facts_g = expected.get("output_facts"), got.get("output_facts")
    if case.get("check_parameter_type") and isinstance(facts_e, list):
        for i, (fe, fg) in enumerate(zip(facts_e, facts_g or [])):
            if fe and fe.get("parameter") and not (fg or {}).get("parameter"):
                lines.append(messages.should_be_parameter(i))
            elif fe and fe.get("requires_grad") and not (fg or {}).get("requires_grad"):
                lines.append(messages.frozen_parameter(i))
    changed = mutated(case, got)
    if changed:
        names = [case.get("arg_names", [])[i] if i < len(case.get("arg_names", [])) else f"argument {i}" for i in changed]
        lines.append(messages.modified_in_place(names))
    lines += after_output(lines, _gradient_problems(got, expected, tol, public, case.get("arg_names", [])))
    return Verdict(FAILED if lines else PASSED, lines)


def judge_parameters(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    lines = parameter_problems(
        expected["params"], got.get("params") or [], tol, public,
        expected_shapes=expected.get("param_shapes"), my_shapes=got.get("param_shapes"),
        stride=case.get("param_stride"), shapes_only=bool(case.get("shapes_only")),
        expected_buffers=expected.get("buffers", []), my_buffers=got.get("buffers", []),
        expect_count=case.get("expect_count"))
    return Verdict(FAILED if lines else PASSED, lines)


def judge_raises(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    wanted = case["exception"]
    if got.get("ok"):
        return Verdict(FAILED, [messages.nothing_raised(wanted)])
    error = got["error"]
    if error.get("not_attempted"):
        return Verdict(NOT_ATTEMPTED, [messages.NOT_ATTEMPTED])
    if error.get("type") != wanted and error.get("type") not in case.get("also_accepted", ()):
        return Verdict(FAILED, [messages.wrong_exception(wanted, str(error.get("type")), str(error.get("message", "")), public)])
    return Verdict(PASSED)


def judge_dropout(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    """Dropout by its properties: zeros or x/(1-p), keep rate near 1-p, shape and graph preserved."""
    facts = got.get("output_facts") or {}
    lines = dropout_problems(got.get("output"), case["input"], case["p"], public, needs_graph=bool(case.get("needs_graph")),
                             requires_grad=bool(facts.get("requires_grad")), modified=bool(mutated(case, got)))
    return Verdict(FAILED if lines else PASSED, lines)


def judge_module_dropout(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    """A module's dropout in training mode by its properties, one token (T = 1), against its eval-mode answer."""
    lines = module_dropout_problems(got.get("output"), expected.get("output"), case["p"], case["heads"], public)
    if mutated(case, got):
        lines.append(messages.modified_in_place(case.get("arg_names", ["the input x"])))
    return Verdict(FAILED if lines else PASSED, lines)


JUDGES = {"equal": judge_equal, "parameters": judge_parameters, "raises": judge_raises, "dropout": judge_dropout,
          "module_dropout": judge_module_dropout}


def _batch_sized_mask(case: dict, error: dict) -> bool:
    """A module's forward failed broadcasting its [T, T] scores against a mask of the batch's size: the mask
    sliced with a num_tokens read from the batch dimension (``num_tokens, b, d_in = x.shape``)."""
    request = case.get("request") or {}
    args = request.get("forward_args") if request.get("kind") == "module" else None
    if not args or not isinstance(args[0], torch.Tensor) or args[0].dim() != 3:
        return False
    b, T = args[0].shape[:2]
    found = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)", str(error.get("message", "")))
    return bool(found) and b != T and {int(found[1]), int(found[2])} == {b, T}


def judge(case: dict, expected: dict | None, got: dict, tol: Tolerance, public: bool) -> Verdict:
    kind = case.get("judge", "equal")
    if kind != "raises" and not got.get("ok"):
        verdict = error_verdict(got, public)
        if verdict.status == FAILED and _batch_sized_mask(case, got["error"]):
            verdict.lines.append(likely_line(hint("num-tokens-from-batch")))
        return verdict
    if case.get("with_parameters"):  # the module's own parameters first (drawn before ours were loaded)
        verdict = judge_parameters(case, expected or {}, got, tol, public)
        if not verdict.passed:
            return verdict
    return JUDGES[kind](case, expected or {}, got, tol, public)
