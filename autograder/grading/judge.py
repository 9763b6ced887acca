"""Judge a worker's answer against the expected answer for one case.

Judges are named so that recorded public cases (``grade check``) and live hidden cases use the same
code: ``equal`` (outputs, and gradients when the case has an upstream gradient), ``parameters``
(parameters drawn after seeding), ``raises``, ``dropout`` (the properties of dropout), ``module_dropout`` (a module's
dropout in training mode, by its properties).

What a judge says comes from ``autograder.feedback``, which the nbgrader notebooks carry too: a judge
only unpacks the answer as the trusted side took it (``sandbox/answers.py``): values and gradients it compares,
the arguments the trusted side read back changed from its own buffer (``modified_args``), and facts that are the
worker's word, which are said to the student as notes and never cost or earn a point.

What the trusted side added to the answer from the student's own files (``grading/own_source.py``) is read here
too: the student's own names (``own_names``: what a hidden count may show of them, ``feedback/redact.py``), their
warnings (``warnings``, each verified against its file and line) and the line an error was raised at
(``source_line``), from which the likely cause is said in the student's terms.
"""
from __future__ import annotations

import torch

from autograder.feedback import messages
from autograder.feedback.catalogue import likely_line
from autograder.feedback.compare import compare_values
from autograder.feedback.dropout import dropout_gradient_problems, dropout_problems, module_dropout_problems
from autograder.feedback.gradients import NO_SUCH_PARAMETER, after_output, gradient_problems
from autograder.feedback.parameters import modules_after_problems, parameter_problems
from autograder.feedback.redact import Hidden, sizes_of
from autograder.feedback.runtime_errors import error_hints
from autograder.feedback.structure import structure_hints
from autograder.feedback.warned import warning_hints, warning_lines

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


def module_arg_names(case: dict) -> list[str]:
    """The names of a function case's module arguments (``$module`` specs), in argument order: how the student's
    code names them (``sa_v2``, ``sa_v1``)."""
    args = (case.get("request") or {}).get("args") or []
    names = case.get("arg_names") or []
    return [names[i] if i < len(names) else f"argument {i + 1}" for i, a in enumerate(args)
            if isinstance(a, dict) and "$module" in a]


def judge_equal(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    lines: list[str] = []
    for field in case.get("fields", ["output"]):
        if field == "output":
            lines += compare_values(got.get("output"), expected.get("output"), tol, public, "output",
                                    case.get("mistakes"))
        elif field == "modules_after":
            lines += modules_after_problems(got.get(field), expected.get(field), module_arg_names(case), tol, public,
                                            case.get("modules_before"))
        else:
            lines += compare_values(got.get(field), expected.get(field), tol, public, field.replace("_", " "))
    changed = mutated(case, got)
    if changed:
        names = [case.get("arg_names", [])[i] if i < len(case.get("arg_names", [])) else f"argument {i}"
                 for i in changed]
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
        expect_count=case.get("expect_count"), unregistered=got.get("unregistered") or ())
    return Verdict(FAILED if lines else PASSED, lines)


def judge_raises(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    wanted = case["exception"]
    if got.get("ok"):
        return Verdict(FAILED, [messages.nothing_raised(wanted)])
    error = got["error"]
    if error.get("not_attempted"):
        return Verdict(NOT_ATTEMPTED, [messages.NOT_ATTEMPTED])
    if error.get("type") != wanted and error.get("type") not in case.get("also_accepted", ()):
        return Verdict(FAILED,
                       [messages.wrong_exception(wanted, str(error.get("type")), str(error.get("message", "")),
                                                 public)])
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


def case_sizes(case: dict, expected: dict | None) -> set:
    """The case's own sizes (``redact.sizes_of``): its arguments, the shapes of its inputs and of the expected answer;
    never a seed."""
    request = case.get("request") or {}
    before = [call.get("args") for call in request.get("calls_before") or []]
    return sizes_of(request.get("init_args"), request.get("init_kwargs"), request.get("args"), request.get("kwargs"),
                    request.get("forward_args"), before, (expected or {}).get("output"))


def shown_as(case: dict, expected: dict | None, got: dict, public: bool):
    """``True`` on a public case; on a hidden one, what may be shown of it (``redact.Hidden``): the student's own names
    (from their source, as the trusted side parsed it) and the case's own sizes."""
    if public:
        return True
    names = got.get("own_names")
    return Hidden(names if isinstance(names, (set, frozenset)) else (), case_sizes(case, expected))


def _input_shape(case: dict):
    request = case.get("request") or {}
    args = request.get("forward_args") if request.get("kind") == "module" else request.get("args")
    first = args[0] if args else None
    return list(first.shape) if isinstance(first, torch.Tensor) else None


def _error_hints(case: dict, error: dict, public, warnings) -> list[str]:
    """The likely cause of an error, in the student's terms: from torch's words and the line it was raised at; from
    what the module's __init__ left unregistered, where loading the reference weights found no such parameter."""
    request = case.get("request") or {}
    found = [likely_line(h) for h in error_hints(error, module=request.get("kind") == "module",
                                                  init_args=request.get("init_args") or (),
                                                  x_shape=_input_shape(case), source_line=error.get("source_line"),
                                                  warnings=warnings)]
    if error.get("phase") == "loading the reference weights":
        found += structure_hints(error.get("unregistered") or (), public)
    return found


def judge(case: dict, expected: dict | None, got: dict, tol: Tolerance, public: bool) -> Verdict:
    kind = case.get("judge", "equal")
    public = shown_as(case, expected, got, public)
    warnings = got.get("warnings") or []
    if kind != "raises" and not got.get("ok"):
        verdict = error_verdict(got, public)
        if verdict.status == FAILED:
            verdict.lines += _error_hints(case, got["error"], public, warnings)
    else:
        verdict = None
        if case.get("with_parameters"):  # the module's own parameters first (drawn before ours were loaded)
            verdict = judge_parameters(case, expected or {}, got, tol, public)
        if verdict is None or verdict.passed:
            verdict = JUDGES[kind](case, expected or {}, got, tol, public)
    if verdict.status == FAILED:  # what the student's own warnings name, unless a line says it already
        named = {getattr(line, "mid", None) for line in verdict.lines}
        verdict.lines += [h for h in warning_hints(warnings) if h.mid not in named]
    verdict.warnings = warning_lines(warnings, public)
    return verdict
