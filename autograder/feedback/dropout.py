"""Dropout judged by its properties: each entry 0 or x / (1 - p), about 1 - p of them kept, the graph kept."""
from __future__ import annotations

import torch

from .catalogue import hint, likely_line
from .describe import fmt_shape, kind_of


def dropout_problems(out, x: torch.Tensor, p: float, public: bool, *, needs_graph: bool = False,
                     requires_grad: bool = False, modified: bool = False) -> list[str]:
    """``out``: what dropout returned for input ``x``; ``requires_grad``: whether it is in the autograd graph;
    ``modified``: whether the call changed ``x`` in place."""
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(x.shape):
        return [f"expected a tensor of shape {fmt_shape(x)}, got {kind_of(out, public, set(x.shape))}"]
    o, xd = out.detach().double(), x.detach().double()
    zero = o.abs() <= 1e-12
    scaled = (o - xd / (1 - p)).abs() <= 1e-5 * (1 + xd.abs())
    lines = []
    if not bool((zero | scaled).all()):
        if bool(((o - xd).abs() <= 1e-6).all()) and p > 0:
            lines.append("your output equals the input: dropout was not applied (eval mode? a module created with "
                         "p=0?)")
        else:
            lines.append(f"every entry must be 0 or input / (1 - p) = input * {1 / (1 - p):.4g}; yours are not"
                         " (kept entries must be rescaled by 1/(1-p))")
    keep = 1 - zero.double().mean().item()
    n = x.numel()
    slack = 6 * (p * (1 - p) / n) ** 0.5 + 1e-9
    if abs(keep - (1 - p)) > slack:
        lines.append(f"you kept {keep:.3f} of the entries; dropout with p={p} keeps about {1 - p:.3f}"
                     " (did you pass 1-p where p was expected?)")
    if needs_graph and not requires_grad:
        lines.append(DROPOUT_GRAPH_CUT)
    if modified:
        lines.append("your code modified its input in place: use the out-of-place dropout")
    return lines


#: what a cut graph is said as, wherever dropout's graph is checked
DROPOUT_GRAPH_CUT = "the gradient was cut: the output of dropout must stay in the autograd graph"


def dropout_gradient_problems(out, x: torch.Tensor, p: float, upstream, backward, grad, public: bool) -> list[str]:
    """The gradient of ``sum(out * upstream)`` with respect to ``x``, as the student's dropout gave it, against the one
    its output implies: the upstream gradient / (1 - p) where an entry was kept, 0 where it was dropped (where the
    input is 0 the output does not show the mask, and that entry is not judged)."""
    if backward != "done" or not isinstance(grad, torch.Tensor) or not isinstance(upstream, torch.Tensor):
        return [DROPOUT_GRAPH_CUT]
    if tuple(grad.shape) != tuple(x.shape):
        return [f"the gradient through your dropout has shape {kind_of(grad, public, set(x.shape))}, "
                f"expected {fmt_shape(x)}"]
    kept = out.detach().double().abs() > 1e-12
    expected = torch.where(kept, upstream.double() / (1 - p), torch.zeros((), dtype=torch.float64))
    seen = x.detach() != 0
    g = grad.detach().double()
    if not bool(((g - expected).abs() <= 1e-5 * (1 + expected.abs()))[seen].all()):
        return ["the gradient through your dropout is not the upstream gradient / (1 - p) on the kept entries and 0 on "
                "the dropped ones: build the output from the input with torch operations (x * mask / (1 - p)) so "
                "autograd gives it"]
    return []


def module_dropout_problems(out, eval_out, p: float, heads: int, public: bool) -> list[str]:
    """A module's training-mode answer for one token (T = 1) beside its eval-mode answer, same weights and input.

    With one token each head's one attention weight is 1: dropout on the weights zeroes it (that head's part of
    the output is all zeros) or keeps it rescaled (the eval-mode part / (1 - p)), whatever the mask. The output's
    last dim is ``heads`` parts side by side (a module with an output projection is given an identity one).
    """
    if not isinstance(out, torch.Tensor) or not isinstance(eval_out, torch.Tensor) or out.shape != eval_out.shape:
        return [f"expected a tensor of shape {fmt_shape(eval_out)}, got {kind_of(out, public, set(eval_out.shape))}"]
    o = out.detach().double().reshape(-1, heads, eval_out.shape[-1] // heads)
    e = eval_out.detach().double().reshape(o.shape)
    zero = (o.abs() <= 1e-7).all(-1)
    scaled = ((o - e / (1 - p)).abs() <= 1e-5 + 1e-4 * (e / (1 - p)).abs()).all(-1)
    same = ((o - e).abs() <= 1e-5 + 1e-4 * e.abs()).all(-1)
    lines = []
    if bool(same.all()):
        return [f"in training mode with dropout {p:g}, your output equals the eval-mode output: dropout was not "
                "applied to the attention weights", likely_line(hint("dropout-missing-or-on-scores"))]
    if not bool((zero | scaled).all()):
        if bool((zero | same).all()):
            lines.append(f"the attention weights dropout keeps must be rescaled by 1/(1-p) = {1 / (1 - p):.4g}: with "
                         "one token, each head's output is all zeros or the eval-mode output / (1 - p); yours are not "
                         "rescaled")
        else:
            lines.append("with one token, each head's attention weight is 1, so dropout on the attention weights "
                         "leaves each head's output all zeros or the eval-mode output / (1 - p); yours are neither")
            lines.append(likely_line(hint("dropout-on-values")))
    keep = 1 - zero.double().mean().item()
    slack = 6 * (p * (1 - p) / zero.numel()) ** 0.5 + 1e-9
    if abs(keep - (1 - p)) > slack:
        lines.append(f"dropout kept {keep:.3f} of the heads' attention weights; with p={p:g} it keeps about "
                     f"{1 - p:.3f}")
    return lines
