"""A module's parameters as drawn after seeding: names, order, shapes, values; its buffers and size."""
from __future__ import annotations

import math

import torch

from .catalogue import MISCONCEPTIONS, Likely
from .compare import compare_values
from .redact import redact_dims, redact_names
from .tolerance import Tolerance, same


def shape_of(value) -> list:
    """A parameter's shape: from a tensor, or as given when only shapes are known."""
    return list(value.shape) if isinstance(value, torch.Tensor) else [int(d) for d in value]


def parameter_problems(expected: list, mine: list, tol: Tolerance, public: bool, *, expected_shapes=None,
                       my_shapes=None, stride=None, shapes_only: bool = False, expected_buffers=(), my_buffers=(),
                       expect_count=None) -> list[str]:
    """``expected``, ``mine``: (name, tensor, or shape when only shapes are compared) pairs in creation order.

    ``stride``: the large parameters are every ``stride``-th value only, their shapes in ``expected_shapes``
    and ``my_shapes`` (name -> shape). Buffers: (name, shape) pairs. ``expect_count``: the number of values in all.
    """
    exp_names, my_names = [n for n, _ in expected], [n for n, _ in mine]
    if exp_names != my_names:
        lines = [f"expected parameters {exp_names} (in this order), got {redact_names(my_names, exp_names, public)}"]
        if sorted(exp_names) == sorted(my_names):
            lines.append(Likely("likely: the parameters are created in a different order, so the seeded random draws land in the wrong matrices", "parameter-order"))
        return lines
    lines = []
    by_name = dict(mine)
    exp_shapes = dict(expected_shapes or [(n, shape_of(t)) for n, t in expected])
    mine_shapes = dict(my_shapes or [(n, shape_of(t)) for n, t in mine])
    for name, e in expected:
        shape, mine_shape = list(exp_shapes[name]), list(mine_shapes.get(name, []))
        if shapes_only or stride:
            if mine_shape != shape:
                lines.append(f"parameter {name}: expected shape {shape}, got {redact_dims(mine_shape, set(shape), public)}")
            if shapes_only or mine_shape != shape:
                continue
        sampled = stride and math.prod(shape) != e.numel()
        label = f"parameter {name}" + (f" (compared on every {stride}th value)" if sampled else "")
        lines += compare_values(by_name[name], e, tol, public, label)
    if lines and not shapes_only:
        swapped = {n for n, e in expected for m, g in mine if n != m and list(exp_shapes[n]) == list(mine_shapes.get(m, []))
                   and tuple(e.shape) == tuple(g.shape) and same(g, e, tol)}
        transposed = [n for n, e in expected if n in by_name and isinstance(by_name[n], torch.Tensor)
                      and by_name[n].dim() == 2 and tuple(by_name[n].shape) == tuple(e.shape) and not same(by_name[n], e, tol)
                      and same(by_name[n].t().reshape(e.shape), e, tol)]
        if swapped:
            lines.append(Likely("likely: the random draws landed in other parameters: create them in the specified order", "parameter-order"))
        elif transposed:
            lines.append(Likely("likely: " + MISCONCEPTIONS["weights-drawn-transposed"], "weights-drawn-transposed"))
        else:
            lines.append(Likely("likely: a different constructor or a different number of random draws (torch.rand vs torch.randn, nn.Linear vs nn.Parameter)", "different-constructor"))
    mine_buffers = {n: list(s) for n, s in my_buffers}
    for name, shape in expected_buffers:
        if name not in mine_buffers:
            lines.append(f"no registered buffer named {name!r} (use self.register_buffer({name!r}, ...))")
        elif mine_buffers[name] != list(shape):
            lines.append(f"buffer {name!r}: expected shape {list(shape)}, got {redact_dims(mine_buffers[name], set(shape), public)}")
    if expect_count is not None:
        count = sum(math.prod(shape) for shape in mine_shapes.values())
        if count != expect_count:
            lines.append(f"expected {expect_count:,} parameters in all, got {count:,}")
    return lines
