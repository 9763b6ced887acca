"""Gradients: a graph cut on the way, an input or parameter no gradient reaches, values that differ."""
from __future__ import annotations

import torch

from .catalogue import Likely, MISCONCEPTIONS
from .compare import compare_values
from .tolerance import Tolerance

#: what a parameter's gradient is, in ``gradient_problems``, when the module has no such parameter
NO_SUCH_PARAMETER = "no such parameter"
GRAPH_CUT = ("the gradient was cut: your output has no autograd graph (a .detach(), .item(), .numpy(), "
             "torch.tensor(...) re-wrap or torch.no_grad() on the way?)")


def backward_state(output, upstream) -> str:
    """Whether ``upstream`` can be backpropagated from ``output``: "done" when it can (the caller then
    does it), else "not a tensor", "no graph" or "shape"."""
    if not isinstance(output, torch.Tensor):
        return "not a tensor"
    if not output.requires_grad:
        return "no graph"
    if tuple(output.shape) != tuple(upstream.shape):
        return "shape"
    return "done"


def gradient_problems(state: str, inputs: list, params: list, tol: Tolerance, public: bool) -> list[str]:
    """``state``: what ``backward_state`` said; ``inputs`` and ``params``: (name, the gradient got (None when
    none reached it; NO_SUCH_PARAMETER), the expected gradient (None: not checked)) triples."""
    if state == "no graph":
        return [GRAPH_CUT]
    if state == "not a tensor":
        return ["no gradient could flow: your output is not a tensor"]
    if state == "shape":
        return ["gradients were not checked: your output has the wrong shape"]
    problems = []
    for name, got, expected in inputs:
        if got is None and expected is not None:
            problems.append(f"no gradient reaches {name}: the graph from {name} to your output is cut (.detach()? a "
                            "copy through numpy or a Python list?)")
        elif expected is not None:
            problems += compare_values(got, expected, tol, public, f"gradient w.r.t. {name}")
    for name, got, expected in params:
        if got is None and expected is not None:
            problems.append(f"parameter {name} gets no gradient: it is unused in forward, or cut by .detach()")
        elif isinstance(got, str):
            problems.append(f"your module has no parameter {name}")
        elif expected is not None:
            problems += compare_values(got, expected, tol, public, f"gradient w.r.t. parameter {name}")
    return problems


#: the line that sums up gradients that differ where the output differs too (``after_output``, ``said_once``)
GRADIENTS_TOO = "the gradients differ too; they follow from the output, so fix the output first"


#: the gradient lines that say something the output's own lines do not (a graph cut, a parameter left out)
_NEW_FACTS = ("the gradient was cut", "no gradient", "parameter")


def said_once(said: dict, step: str, count: str, case: str, lines: list) -> list:
    """``lines``, or only what is new in them when the same case of the same step already failed in another
    count with the same output lines (its values block, its likely: line, its grid): one line points to that
    count and says the gradients differ too; a cut graph or a parameter without a gradient is still said.
    ``said`` is kept per submission: (step, case) -> (the count, its lines)."""
    before = said.get((step, case))
    if before is None or before[0] == count:
        said.setdefault((step, case), (count, list(lines)))
        return lines
    earlier = [str(line) for line in before[1]]
    if not earlier or len(lines) <= len(earlier) or [str(line) for line in lines[:len(earlier)]] != earlier:
        return lines
    new = lines[len(earlier):]
    facts = [line for line in new if str(line).startswith(_NEW_FACTS)]
    head = f"the output of this case is wrong as shown under [{before[0]}]"
    if len(facts) < len(new):  # gradients whose values differ: they follow from the output
        head += "; " + GRADIENTS_TOO.replace("the gradients differ too; ", "the gradients differ too: ")
    return [head, *facts]


def after_output(output_lines: list, gradient_lines: list) -> list[str]:
    """The gradient lines to show beside the output's: when the output is wrong too, differing gradients
    follow from it and are summed up in one line; a cut graph is still said."""
    if gradient_lines and output_lines and not any(
            g.startswith(("the gradient was cut", "no gradient", "parameter")) for g in gradient_lines):
        return [GRADIENTS_TOO]
    if not output_lines and any("values differ" in g for g in gradient_lines) \
            and not any(g.startswith("likely: ") for g in gradient_lines):
        return [*gradient_lines, Likely("likely: " + MISCONCEPTIONS["gradient-cut-one-path"], "gradient-cut-one-path")]
    return gradient_lines
