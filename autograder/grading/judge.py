"""Judge a worker's answer against the expected answer for one case.

Judges are named so that recorded public cases (``grade check``) and live hidden cases use the same
code: ``equal`` (outputs, and gradients when the case has an upstream gradient), ``parameters``
(parameters drawn after seeding), ``raises``, ``dropout`` (the properties of dropout).
"""
from __future__ import annotations

import math

import torch

from . import diagnose, redact
from .tensors import Tolerance, describe_difference, fmt_dtype, fmt_shape, same
from .verdict import FAILED, NOT_ATTEMPTED, PASSED, Verdict


def describe_error(error: dict, public: bool = True) -> list[str]:
    if error.get("type") in ("LimitExceeded", "WorkerDied"):
        return [error.get("message", "the worker process ended")]
    where = error.get("where") or {}
    place = ""
    if where.get("file"):
        place = f" ({redact.text(str(where['file']), public, 100)}, line {where.get('line')}"
        place += f", in {redact.text(str(where['function']), public, 100)})" if where.get("function") else ")"
    kind = redact.type_name(str(error.get("type")), public)
    message = redact.text(str(error.get("message", "")), public)
    lines = [f"your code raised {kind}{place} during {error.get('phase', 'the call')}: {message}"[:600]]
    if where.get("text"):
        lines.append(f"    {redact.text(str(where['text']), public, 200)}")
    return lines


def error_verdict(got: dict, public: bool = True) -> Verdict:
    error = got["error"]
    if error.get("not_attempted"):
        return Verdict(NOT_ATTEMPTED, ["not attempted yet (the stub still raises NotImplementedError)"])
    return Verdict(FAILED, describe_error(error, public))


def _kind(value, public: bool = True, known: set[int] = frozenset()) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {redact.dims(list(value.shape), known, public)}, dtype {fmt_dtype(value)}"
    if isinstance(value, dict) and "$unsupported" in value:
        return f"a {redact.text(str(value['$unsupported']), public, 100)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


def compare_values(got, expected, tol: Tolerance, public: bool, what: str, mistakes: dict | None = None) -> list[str]:
    """Problems with ``got`` as ``expected``; empty when they agree."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            if isinstance(got, (int, float)) and not isinstance(got, bool) and expected.dim() == 0:
                got = torch.tensor(float(got), dtype=expected.dtype)
            else:
                return [f"{what}: expected {_kind(expected)}, got {_kind(got, public, set(expected.shape))}"]
        if tuple(got.shape) != tuple(expected.shape):
            shown = redact.dims(list(got.shape), set(expected.shape), public)
            lines = [f"{what}: expected shape {fmt_shape(expected)}, got shape {shown}"]
            lines += ["likely: " + h for h in diagnose.generic(got, expected)]
            return lines
        lines = []
        if got.dtype != expected.dtype:
            lines.append(f"{what}: expected dtype {fmt_dtype(expected)}, got {fmt_dtype(got)}")
            if not got.dtype.is_floating_point:
                return lines
        if same(got, expected, tol):
            return lines
        lines += [f"{what}: " + l if i == 0 else "  " + l for i, l in enumerate(describe_difference(got, expected, tol, public))]
        hints = diagnose.known(got, mistakes or {}) or diagnose.generic(got, expected)
        lines += ["likely: " + h for h in hints]
        return lines
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if isinstance(got, torch.Tensor) and got.dim() == 0:
            got = got.item()
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return [f"{what}: expected a number, got {_kind(got, public)}"]
        if abs(got - expected) <= tol.atol + tol.rtol * abs(expected):
            return []
        return [f"{what}: expected {expected:.6g}, got {got:.6g}" if public else f"{what}: the number differs from the expected one"]
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return [f"{what}: expected {_kind(expected)}, got {_kind(got, public)}"]
        problems = []
        for i, (g, e) in enumerate(zip(got, expected)):
            problems += compare_values(g, e, tol, public, f"{what}[{i}]")
        return problems
    if expected is None:
        return [] if got is None else [f"{what}: expected None, got {_kind(got, public)}"]
    if got == expected:
        return []
    return [f"{what}: expected {expected!r}, got {redact.text(repr(got), public, 200)}"]


def _gradient_problems(got: dict, expected: dict, tol: Tolerance, public: bool, arg_names: list[str]) -> list[str]:
    if expected.get("backward") != "done":
        return []
    state = got.get("backward")
    if state == "no graph":
        return ["the gradient was cut: your output has no autograd graph (a .detach(), .item(), .numpy(), "
                "torch.tensor(...) re-wrap or torch.no_grad() on the way?)"]
    if state == "not a tensor":
        return ["no gradient could flow: your output is not a tensor"]
    if state == "shape":
        return ["gradients were not checked: your output has the wrong shape"]
    problems = []
    for key, exp in (expected.get("input_grads") or {}).items():
        name = arg_names[int(key)] if int(key) < len(arg_names) else f"argument {key}"
        g = (got.get("input_grads") or {}).get(key)
        if g is None and exp is not None:
            problems.append(f"no gradient reaches {name}: the graph from {name} to your output is cut (.detach()? a copy through numpy or a Python list?)")
        elif exp is not None:
            problems += compare_values(g, exp, tol, public, f"gradient w.r.t. {name}")
    for name, exp in (expected.get("param_grads") or {}).items():
        g = (got.get("param_grads") or {}).get(name, "missing")
        if g is None and exp is not None:
            problems.append(f"parameter {name} gets no gradient: it is unused in forward, or cut by .detach()")
        elif isinstance(g, str):
            problems.append(f"your module has no parameter {name}")
        elif exp is not None:
            problems += compare_values(g, exp, tol, public, f"gradient w.r.t. parameter {name}")
    return problems


def mutated(case: dict, got: dict) -> list[int]:
    """The arguments the student's code modified in place: what came back after the call, compared here
    with what was sent (the worker's own word on it could be forged)."""
    request = case.get("request", {})
    sent = request.get("forward_args") if request.get("kind") == "module" else request.get("args")
    after = got.get("args_after")
    if not isinstance(sent, (list, tuple)) or not isinstance(after, (list, tuple)):
        return []
    changed = []
    for i, (before, now) in enumerate(zip(sent, after)):
        if not isinstance(before, torch.Tensor):
            continue
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
                lines.append(f"output[{i}] should be an nn.Parameter (so that training can update it)")
    changed = mutated(case, got)
    if changed:
        names = [case.get("arg_names", [])[i] if i < len(case.get("arg_names", [])) else f"argument {i}" for i in changed]
        lines.append(f"your code modified its input in place ({', '.join(names)}): use out-of-place operations (x / s, not x /= s)")
    grads = _gradient_problems(got, expected, tol, public, case.get("arg_names", []))
    if grads and lines and not any(g.startswith(("the gradient was cut", "no gradient", "parameter")) for g in grads):
        grads = ["the gradients differ too; they follow from the output, so fix the output first"]
    lines += grads
    return Verdict(FAILED if lines else PASSED, lines)


def _shape(value) -> list[int]:
    """A parameter's shape: from a tensor, or as the worker sends it when only shapes are asked for."""
    return list(value.shape) if isinstance(value, torch.Tensor) else [int(d) for d in value]


def judge_parameters(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    exp, mine = expected["params"], got.get("params") or []
    exp_names, my_names = [n for n, _ in exp], [n for n, _ in mine]
    if exp_names != my_names:
        lines = [f"expected parameters {exp_names} (in this order), got {redact.names(my_names, exp_names, public)}"]
        if sorted(exp_names) == sorted(my_names):
            lines.append("likely: the parameters are created in a different order, so the seeded random draws land in the wrong matrices")
        return Verdict(FAILED, lines)
    lines = []
    by_name = dict(mine)
    stride = case.get("param_stride")
    # the shapes: sent apart when the values are a sample (or not sent at all)
    exp_shapes = dict(expected.get("param_shapes") or [(n, _shape(t)) for n, t in exp])
    my_shapes = dict(got.get("param_shapes") or [(n, _shape(t)) for n, t in mine])
    for name, e in exp:
        shape, mine_shape = list(exp_shapes[name]), list(my_shapes.get(name, []))
        if case.get("shapes_only") or stride:
            if mine_shape != shape:
                lines.append(f"parameter {name}: expected shape {shape}, got {redact.dims(mine_shape, set(shape), public)}")
            if case.get("shapes_only") or mine_shape != shape:
                continue
        sampled = stride and math.prod(shape) != e.numel()
        label = f"parameter {name}" + (f" (compared on every {stride}th value)" if sampled else "")
        lines += compare_values(by_name[name], e, tol, public, label)
    if lines and not case.get("shapes_only"):
        swapped = {n for n, e in exp for m, g in mine if n != m and list(exp_shapes[n]) == list(my_shapes.get(m, []))
                   and tuple(e.shape) == tuple(g.shape) and same(g, e, tol)}
        if swapped:
            lines.append("likely: the random draws landed in other parameters: create them in the specified order")
        else:
            lines.append("likely: a different constructor or a different number of random draws (torch.rand vs torch.randn, nn.Linear vs nn.Parameter)")
    exp_buffers = dict((n, s) for n, s in expected.get("buffers", []))
    my_buffers = dict((n, s) for n, s in got.get("buffers", []))
    for name, shape in exp_buffers.items():
        if name not in my_buffers:
            lines.append(f"no registered buffer named {name!r} (use self.register_buffer({name!r}, ...))")
        elif list(my_buffers[name]) != list(shape):
            lines.append(f"buffer {name!r}: expected shape {list(shape)}, got {redact.dims(list(my_buffers[name]), set(shape), public)}")
    if "expect_count" in case:
        count = sum(math.prod(shape) for shape in my_shapes.values())
        if count != case["expect_count"]:
            lines.append(f"expected {case['expect_count']:,} parameters in all, got {count:,}")
    return Verdict(FAILED if lines else PASSED, lines)


def judge_raises(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    wanted = case["exception"]
    if got.get("ok"):
        return Verdict(FAILED, [f"expected {wanted} for these arguments, but nothing was raised"])
    error = got["error"]
    if error.get("not_attempted"):
        return Verdict(NOT_ATTEMPTED, ["not attempted yet (the stub still raises NotImplementedError)"])
    if error.get("type") != wanted:
        kind, message = redact.type_name(str(error.get("type")), public), redact.text(str(error.get("message", "")), public)
        return Verdict(FAILED, [f"expected {wanted}, got {kind}: {message}"[:300]])
    return Verdict(PASSED)


def judge_dropout(case: dict, expected: dict, got: dict, tol: Tolerance, public: bool) -> Verdict:
    """Dropout by its properties: zeros or x/(1-p), keep rate near 1-p, shape and graph preserved."""
    p = case["p"]
    x = case["input"]
    out = got.get("output")
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(x.shape):
        return Verdict(FAILED, [f"expected a tensor of shape {fmt_shape(x)}, got {_kind(out, public, set(x.shape))}"])
    o, xd = out.double(), x.double()
    zero = o.abs() <= 1e-12
    scaled = (o - xd / (1 - p)).abs() <= 1e-5 * (1 + xd.abs())
    lines = []
    if not bool((zero | scaled).all()):
        if bool(((o - xd).abs() <= 1e-6).all()) and p > 0:
            lines.append("your output equals the input: dropout was not applied (eval mode? a module created with p=0?)")
        else:
            lines.append(f"every entry must be 0 or input / (1 - p) = input * {1 / (1 - p):.4g}; yours are not"
                         " (kept entries must be rescaled by 1/(1-p))")
    keep = 1 - zero.double().mean().item()
    n = x.numel()
    slack = 6 * (p * (1 - p) / n) ** 0.5 + 1e-9
    if abs(keep - (1 - p)) > slack:
        lines.append(f"you kept {keep:.3f} of the entries; dropout with p={p} keeps about {1 - p:.3f}"
                     " (did you pass 1-p where p was expected?)")
    facts = got.get("output_facts") or {}
    if case.get("needs_graph") and not facts.get("requires_grad"):
        lines.append("the gradient was cut: the output of dropout must stay in the autograd graph")
    if mutated(case, got):
        lines.append("your code modified its input in place: use the out-of-place dropout")
    return Verdict(FAILED if lines else PASSED, lines)


JUDGES = {"equal": judge_equal, "parameters": judge_parameters, "raises": judge_raises, "dropout": judge_dropout}


def judge(case: dict, expected: dict | None, got: dict, tol: Tolerance, public: bool) -> Verdict:
    kind = case.get("judge", "equal")
    if kind != "raises" and not got.get("ok"):
        return error_verdict(got, public)
    if case.get("with_parameters"):  # the module's own parameters first (drawn before ours were loaded)
        verdict = judge_parameters(case, expected or {}, got, tol, public)
        if not verdict.passed:
            return verdict
    return JUDGES[kind](case, expected or {}, got, tol, public)
