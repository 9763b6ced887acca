"""A module's parameters as drawn after seeding: names, order, shapes, values; its buffers and size."""
from __future__ import annotations

import math

import torch

from .catalogue import MISCONCEPTIONS, Likely, hint, likely_line
from .compare import compare_values
from .redact import redact_dims, redact_names
from .structure import structure_hints
from .tolerance import Tolerance, same


def shape_of(value) -> list:
    """A parameter's shape: from a tensor, or as given when only shapes are known."""
    return list(value.shape) if isinstance(value, torch.Tensor) else [int(d) for d in value]


def parameter_problems(expected: list, mine: list, tol: Tolerance, public: bool, *, expected_shapes=None,
                       my_shapes=None, stride=None, shapes_only: bool = False, expected_buffers=(), my_buffers=(),
                       expect_count=None, unregistered=()) -> list[str]:
    """``expected``, ``mine``: (name, tensor, or shape when only shapes are compared) pairs in creation order.

    ``stride``: the large parameters are every ``stride``-th value only, their shapes in ``expected_shapes``
    and ``my_shapes`` (name -> shape). Buffers: (name, shape) pairs. ``expect_count``: the number of values in all.
    ``unregistered``: what the module's __init__ left where nn.Module does not look (``structure.unregistered``),
    said as the likely reason when names or buffers are missing.
    """
    exp_names, my_names = [n for n, _ in expected], [n for n, _ in mine]
    missing_buffers = [n for n, _ in expected_buffers if n not in {m for m, _ in my_buffers}]
    if exp_names != my_names:
        lines = [f"expected parameters {exp_names} (in this order), got {redact_names(my_names, exp_names, public)}"]
        if sorted(exp_names) == sorted(my_names):
            lines.append(Likely("likely: the parameters are created in a different order, so the seeded random draws "
                                "land in the wrong matrices", "parameter-order"))
        else:
            lines += structure_hints(unregistered, public, missing_buffers=missing_buffers,
                                     no_parameters=not my_names)
        return lines
    lines = []
    by_name = dict(mine)
    exp_shapes = dict(expected_shapes or [(n, shape_of(t)) for n, t in expected])
    mine_shapes = dict(my_shapes or [(n, shape_of(t)) for n, t in mine])
    for name, e in expected:
        shape, mine_shape = list(exp_shapes[name]), list(mine_shapes.get(name, []))
        if shapes_only or stride:
            if mine_shape != shape:
                lines.append(f"parameter {name}: expected shape {shape}, got "
                             f"{redact_dims(mine_shape, set(shape), public)}")
            if shapes_only or mine_shape != shape:
                continue
        sampled = stride and math.prod(shape) != e.numel()
        label = f"parameter {name}" + (f" (compared on every {stride}th value)" if sampled else "")
        lines += compare_values(by_name[name], e, tol, public, label)
    if lines and not shapes_only:
        swapped = {n for n, e in expected for m, g in mine if n != m
                   and list(exp_shapes[n]) == list(mine_shapes.get(m, []))
                   and tuple(e.shape) == tuple(g.shape) and same(g, e, tol)}
        transposed = [n for n, e in expected if n in by_name and isinstance(by_name[n], torch.Tensor)
                      and by_name[n].dim() == 2 and tuple(by_name[n].shape) == tuple(e.shape)
                      and not same(by_name[n], e, tol)
                      and same(by_name[n].t().reshape(e.shape), e, tol)]
        if swapped:
            lines.append(Likely("likely: the random draws landed in other parameters: create them in the specified "
                                "order", "parameter-order"))
        elif transposed:
            lines.append(Likely("likely: " + MISCONCEPTIONS["weights-drawn-transposed"], "weights-drawn-transposed"))
        else:
            lines.append(Likely("likely: a different constructor or a different number of random draws (torch.rand vs "
                                "torch.randn, nn.Linear vs nn.Parameter)", "different-constructor"))
    mine_buffers = {n: list(s) for n, s in my_buffers}
    for name, shape in expected_buffers:
        if name not in mine_buffers:
            lines.append(f"no registered buffer named {name!r} (use self.register_buffer({name!r}, ...))")
            lines += [h for h in structure_hints(unregistered, public, missing_buffers=[name])
                      if h.mid == "buffer-not-registered"]
        elif mine_buffers[name] != list(shape):
            lines.append(f"buffer {name!r}: expected shape {list(shape)}, got "
                         f"{redact_dims(mine_buffers[name], set(shape), public)}")
    if expect_count is not None:
        count = sum(math.prod(shape) for shape in mine_shapes.values())
        if count != expect_count:
            lines.append(f"expected {expect_count:,} parameters in all, got {count:,}")
    return lines


def modules_after_problems(got, expected, module_names: list, tol: Tolerance, public, before=None) -> list[str]:
    """The parameters of each module argument after the call, named as the student's code names them
    (``sa_v1.W_key``): ``got`` and ``expected`` hold one list of (name, tensor) pairs per module argument, in
    argument order; ``module_names`` are those arguments' names; ``before``, the same as the modules were built,
    says which parameter the call left as it was."""
    lines: list[str] = []
    before = before or []
    got = got if isinstance(got, (list, tuple)) else []
    for i, wanted in enumerate(expected or []):
        module = module_names[i] if i < len(module_names) else f"module argument {i + 1}"
        mine = got[i] if i < len(got) and isinstance(got[i], (list, tuple)) else []
        mine = [tuple(pair) for pair in mine if isinstance(pair, (list, tuple)) and len(pair) == 2
                and isinstance(pair[0], str)]
        exp_names, my_names = [n for n, _ in wanted], [n for n, _ in mine]
        if exp_names != my_names:
            lines.append(f"{module}: expected parameters {exp_names} after the call, got "
                         f"{redact_names(my_names, exp_names, public)}")
            continue
        built = dict(before[i]) if i < len(before) else {}
        for (name, e), (_, g) in zip(wanted, mine):
            found = compare_values(g, e, tol, public, f"{module}.{name}")
            specific = None
            if found and isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor) and g.shape == e.shape:
                if isinstance(built.get(name), torch.Tensor) and same(g, built[name], tol):
                    specific = likely_line(hint("not-copied", param=f"{module}.{name}"))
                elif e.dim() == 2 and same(g, e.t().reshape(e.shape), tol):
                    specific = likely_line(hint("reshaped-not-transposed", param=f"{module}.{name}"))
            if specific is not None:  # one cause, one line: what the values alone suggest is left unsaid
                found = [line for line in found if not str(line).startswith("likely: ")] + [specific]
            lines += found
    return lines
