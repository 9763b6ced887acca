"""Judge a worker's answer against the expected answer for one case.

Judges are named so that recorded public cases (``grade check``) and live hidden cases use the same
code: ``equal`` (outputs, and gradients when the case has an upstream gradient), ``parameters``
(parameters drawn after seeding), ``raises``, ``dropout`` (the properties of dropout), ``module_dropout`` (a module's dropout in training mode, by
its properties).

What a judge says comes from ``autograder.feedback``, which the nbgrader notebooks carry too: a judge
only unpacks the answer as the trusted side took it (``sandbox/answers.py``): values and gradients it compares,
the arguments the trusted side read back changed from its own buffer (``modified_args``), and facts that are the
worker's word, which are said to the student as notes and never cost or earn a point.
"""
from __future__ import annotations

import re

import torch

from autograder.feedback import messages
from autograder.feedback.catalogue import hint, likely_line
from autograder.feedback.compare import compare_values
from autograder.feedback.dropout import dropout_gradient_problems, dropout_problems, module_dropout_problems
from autograder.feedback.gradients import NO_SUCH_PARAMETER, after_output, gradient_problems
from autograder.feedback.parameters import parameter_problems

from autograder.feedback.tolerance import Tolerance
from autograder.outputs.verdict import FAILED, NOT_ATTEMPTED, PASSED, Verdict

__all__ = ["JUDGES", "compare_values", "describe_error", "error_verdict", "judge", "judge_accepts", "judge_dropout",
           "judge_equal", "judge_module_dropout", "judge_parameters", "judge_raises", "mutated"]


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
    """The arguments the student's code modified in place, as the trusted side read them back from the buffer it
    owns after the call (``sandbox/argument_buffer.py``), never as the worker says."""
    return [i for i in got.get("modified_args") or () if type(i) is int]


def judge_equal(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    lines: list[str] = []
    for field in case.get("fields", ["output"]):
        if field == "output":
            lines += compare_values(got.get("output"), expected.get("output"), tol, public, "output", case.get("mistakes"))
        else:
            lines += compare_values(got.get(field), expected.get(field), tol, public, field.replace("_", " "))
    changed = mutated(case, got)
    if changed:
        names = [case.get("arg_names", [])[i] if i < len(case.get("arg_names", [])) else f"argument {i}" for i in changed]
        lines.append(messages.modified_in_place(names))
    lines += after_output(lines, _gradient_problems(got, expected, tol, public, case.get("arg_names", [])))
    return Verdict(FAILED if lines else PASSED, lines, notes=_parameter_notes(case, expected, got))


def _parameter_notes(case: dict, expected: dict, got: dict) -> list[str]:
    """Outputs that should be ``nn.Parameter``s (``init_qkv``): the worker's word, so a note for the student, never a
    point (no effect the trusted side can check tells a parameter from a plain tensor: docs/isolation.md)."""
    facts_e, facts_g = expected.get("output_facts"), got.get("output_facts")
    notes = []
    if case.get("check_parameter_type") and isinstance(facts_e, list):
        for i, (fe, fg) in enumerate(zip(facts_e, facts_g if isinstance(facts_g, list) else [])):
            fg = fg if isinstance(fg, dict) else {}
            if fe and fe.get("parameter") and fg.get("parameter") is not True:
                notes.append(messages.should_be_parameter(i))
            elif fe and fe.get("requires_grad") and fg.get("requires_grad") is not True:
                notes.append(messages.frozen_parameter(i))
    return notes


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


def judge_accepts(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    """Constructing the module with these (valid) arguments must not raise the error meant for invalid ones: with
    ``raises`` cases in the same count, the count says which arguments the student's code refuses, a pattern a
    worker can give only by telling valid arguments from invalid ones (a worker's word that it raised is one bit)."""
    if got.get("ok"):
        return Verdict(PASSED)
    error = got["error"]
    if error.get("not_attempted"):
        return Verdict(NOT_ATTEMPTED, [messages.NOT_ATTEMPTED])
    if error.get("type") in case.get("refusals", ()):
        return Verdict(FAILED, [messages.refused_valid(str(case.get("why", "")), str(error.get("type")),
                                                       str(error.get("message", "")), public)])
    return Verdict(PASSED)  # another error: the count's other cases, and the module's own counts, say it


def judge_dropout(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    """Dropout by its properties: zeros or x/(1-p), keep rate near 1-p, shape kept, and, where the case needs the
    graph, the gradient for the upstream the trusted side chose: a mask / (1 - p) times it, as the output shows the
    mask (the worker's word that its output has a graph earns nothing by itself)."""
    lines = dropout_problems(got.get("output"), case["input"], case["p"], public, modified=bool(mutated(case, got)))
    if not lines and case.get("needs_graph"):
        lines = dropout_gradient_problems(got.get("output"), case["input"], case["p"], case["request"].get("upstream"),
                                          got.get("backward"), (got.get("input_grads") or {}).get("0"), public)
    return Verdict(FAILED if lines else PASSED, lines)


def judge_module_dropout(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    """A module's dropout in training mode by its properties, one token (T = 1), against its eval-mode answer."""
    lines = module_dropout_problems(got.get("output"), expected.get("output"), case["p"], case["heads"], public)
    if mutated(case, got):
        lines.append(messages.modified_in_place(case.get("arg_names", ["the input x"])))
    return Verdict(FAILED if lines else PASSED, lines)


JUDGES = {"equal": judge_equal, "parameters": judge_parameters, "raises": judge_raises, "accepts": judge_accepts,
          "dropout": judge_dropout, "module_dropout": judge_module_dropout}


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
