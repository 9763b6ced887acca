"""The arrays behind a failing case, kept on the trusted side so that a page can draw them.

Public cases (the course documents' own inputs, whose expected values ``grade check`` ships anyway) keep
the expected and the student's tensors, cut to a size worth drawing. Hidden cases keep only what the
redaction rules allow a student to read: the expected shape and dtype, and how many entries differ;
never a value. Torch only: no picture is drawn here.
"""
from __future__ import annotations

import torch

from autograder.feedback.tolerance import within_lower_precision

from .judge import module_arg_names

#: at most this many heads (panels) and rows and columns are kept for a picture
MAX_HEADS = 8
MAX_SIDE = 48


def _as_heads(t: torch.Tensor, heads: int | None) -> torch.Tensor:
    """``t`` as [panels, rows, columns]: the first of a batch, one panel per head when there are heads."""
    t = t.detach().to(torch.float64)
    if t.dim() == 0:
        t = t.reshape(1, 1)
    if t.dim() == 1:
        t = t.unsqueeze(0)
    while t.dim() > 4:
        t = t[0]
    if t.dim() == 4:  # [batch, heads, rows, columns]
        t = t[0]
    elif t.dim() == 3:  # [batch, rows, columns]
        t = t[0].unsqueeze(0)
    else:
        t = t.unsqueeze(0)
    if heads and t.shape[0] == 1 and heads > 1 and t.shape[-1] % heads == 0:  # heads side by side in the columns
        t = torch.stack(t[0].chunk(heads, dim=-1))
    return t[:MAX_HEADS, :MAX_SIDE, :MAX_SIDE]


def _pairs(got, expected, what: str):
    """(label, yours, expected) for each tensor pair of the same shape in an answer, in order."""
    if isinstance(expected, torch.Tensor):
        if type(got) is torch.nn.Parameter:
            got = got.data
        if isinstance(got, torch.Tensor):
            yield what, got, expected
    elif isinstance(expected, (tuple, list)) and isinstance(got, (tuple, list)):
        for i, (g, e) in enumerate(zip(got, expected)):
            yield from _pairs(g, e, f"{what}[{i}]")


def _differ(got: torch.Tensor, expected: torch.Tensor, tol) -> int:
    return int((~tol.close(got.detach(), expected.detach())).sum())


def _modules_after(case: dict, got, expected):
    """Each module argument's parameters after the call, named as the student's code names them (``sa_v1.W_key``)."""
    names = module_arg_names(case)
    got = got if isinstance(got, (list, tuple)) else []
    for i, wanted in enumerate(expected or []):
        module = names[i] if i < len(names) else f"module argument {i + 1}"
        mine = dict(pair for pair in (got[i] if i < len(got) and isinstance(got[i], (list, tuple)) else [])
                    if isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str))
        for name, exp in wanted:
            yield from _pairs(mine.get(name), exp, f"{module}.{name}")


def _candidates(case: dict, expected: dict, got: dict):
    for field in case.get("fields", ["output"]):
        if field == "modules_after":
            yield from _modules_after(case, got.get(field), expected.get(field))
        else:
            yield from _pairs(got.get(field), expected.get(field), field.replace("_", " "))
    names = case.get("arg_names", [])
    for key, exp in (expected.get("input_grads") or {}).items():
        name = names[int(key)] if int(key) < len(names) else f"argument {key}"
        yield from _pairs((got.get("input_grads") or {}).get(key), exp, f"the gradient w.r.t. {name}")


def _num_heads(step: str, case: dict) -> int | None:
    request = case.get("request") or {}
    init = request.get("init_args") or []
    if step.endswith("Wrapper") and len(init) >= 5 and isinstance(init[4], int):
        return init[4]  # the wrapper's output: its heads' context vectors side by side
    return None


def collect(step: str, case: dict, expected: dict | None, got: dict, tol, public: bool) -> dict | None:
    """The evidence of a failing case: the first output (or gradient) that differs, or None when none does."""
    if case.get("judge", "equal") != "equal" or not got.get("ok") or not expected:
        return None
    for what, mine, exp in _candidates(case, expected, got):
        if not exp.dtype.is_floating_point or tuple(mine.shape) != tuple(exp.shape) or not mine.dtype.is_floating_point:
            continue
        differ = _differ(mine.to(exp.dtype), exp, within_lower_precision(mine, exp, tol))
        if not differ:  # a float32 answer with the right values differs in its dtype only: nothing to draw
            continue
        found = {"public": bool(public), "what": what, "shape": list(exp.shape),
                 "dtype": str(exp.dtype).replace("torch.", ""),
                 "differ": differ, "total": exp.numel()}
        if public:
            heads = _num_heads(step, case)
            found.update(case=case.get("name", ""), expected=_as_heads(exp, heads), yours=_as_heads(mine, heads),
                         heads=heads or (exp.shape[1] if exp.dim() == 4 else None),
                         cut=exp.numel() > MAX_HEADS * MAX_SIDE ** 2)
        return found
    return None
