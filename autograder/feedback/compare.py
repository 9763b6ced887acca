"""How an answer differs from the expected one: kind, shape, dtype, and where the values differ."""
from __future__ import annotations

import torch

from .describe import fmt_dtype, fmt_index, fmt_shape, fmt_values, kind_of
from .catalogue import hint, likely_line
from .diagnose import likely, likely_from_values
from .redact import redact_dims, redact_text
from .tolerance import Tolerance, same, within_lower_precision


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of entry ``flat`` of a row-major tensor of ``shape`` (``torch.unravel_index`` imports sympy:
    half a second of ``grade check`` for one failing case)."""
    index = []
    for size in reversed(shape):
        flat, at = divmod(flat, size)
        index.append(at)
    return tuple(reversed(index))


#: the decimals printed values start with, and the most they widen to until an entry that differs shows it
DECIMALS, MAX_DECIMALS = 4, 12


def decimals_to_show(pairs) -> int:
    """The fewest decimals (``DECIMALS`` or more) at which each (expected, got) pair of numbers prints differently:
    a row said to differ never prints as two identical rows."""
    pairs = [(float(e), float(g)) for e, g in pairs]
    for places in range(DECIMALS, MAX_DECIMALS + 1):
        if all(f"{e:.{places}f}" != f"{g:.{places}f}" for e, g in pairs if e != g):
            return places
    return MAX_DECIMALS


def describe_difference(got: torch.Tensor, expected: torch.Tensor, tol: Tolerance, show_values: bool) -> list[str]:
    """Lines saying where ``got`` differs from ``expected`` (same shape assumed)."""
    close = tol.close(got, expected)
    bad = (~close).nonzero()
    lines = [f"values differ at {len(bad)} of {expected.numel()} entries"]
    if expected.dim() == 0:
        if show_values:
            places = max(6, decimals_to_show([(expected.item(), got.item())]))
            lines.append(f"expected {expected.item():.{places}g}, got {got.item():.{places}g}")
        return lines
    diff = (got.detach().double() - expected.detach().double()).abs().nan_to_num(nan=float("inf"))
    worst = _unravel(int(diff.argmax()), tuple(diff.shape))
    first = tuple(int(i) for i in bad[0].tolist())
    lines[0] += f"; first at {fmt_index(first)}, largest at {fmt_index(worst)}"
    if show_values:
        lines[0] += f" (|difference| {diff[worst].item():.4g})"
        row = worst[:-1]
        label = f"row {fmt_index(row)}" if row else "values"
        shown_e, shown_g = (expected[row], got[row]) if row else (expected, got)
        differ = [not c for c in (close[row] if row else close).flatten().tolist()[:8]]
        places = decimals_to_show((e, g) for (e, g), d in zip(zip(shown_e.detach().double().flatten().tolist(),
                                                                    shown_g.detach().double().flatten().tolist()),
                                                              differ) if d)
        lines.append(f"expected {label}: {fmt_values(shown_e, places=places)}")
        lines.append(f"got      {label}: {fmt_values(shown_g, places=places)}")
    return lines


def compare_values(got, expected, tol: Tolerance, public: bool, what: str, mistakes: dict | None = None) -> list[str]:
    """Problems with ``got`` as ``expected`` (tensors, numbers, tuples and lists of them, None, strings);
    empty when they agree. ``mistakes``: label -> the result of a known mistake, for the "likely:" line."""
    if isinstance(expected, torch.Tensor):
        if type(got) is torch.nn.Parameter:
            got = got.data  # as a worker sends it
        if not isinstance(got, torch.Tensor):
            if isinstance(got, (int, float)) and not isinstance(got, bool) and expected.dim() == 0:
                got = torch.tensor(float(got), dtype=expected.dtype)
            else:
                return [f"{what}: expected {kind_of(expected)}, got {kind_of(got, public, set(expected.shape))}"]
        got = got.detach()
        if tuple(got.shape) != tuple(expected.shape):
            shown = redact_dims(list(got.shape), set(expected.shape), public)
            lines = [f"{what}: expected shape {fmt_shape(expected)}, got shape {shown}"]
            lines += [likely_line(h) for h in likely_from_values(got, expected)]
            return lines
        lines = []
        if got.dtype != expected.dtype:
            lines.append(f"{what}: expected dtype {fmt_dtype(expected)}, got {fmt_dtype(got)}")
            if not got.dtype.is_floating_point or not expected.dtype.is_floating_point:
                return lines
            tol = within_lower_precision(got, expected, tol)
            if same(got, expected, tol):  # one cause, said once: the values are right in the lower precision
                if got.dtype == torch.float32 and expected.dtype == torch.float64:
                    lines.append(likely_line(hint("float32-by-default")))
                return lines
        if same(got, expected, tol):
            return lines
        lines += [f"{what}: " + part if i == 0 else "  " + part
                  for i, part in enumerate(describe_difference(got, expected, tol, public))]
        lines += [likely_line(h) for h in likely(got, expected, mistakes)]
        return lines
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if isinstance(got, torch.Tensor) and got.dim() == 0:
            got = got.item()
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return [f"{what}: expected a number, got {kind_of(got, public)}"]
        if abs(got - expected) <= tol.atol + tol.rtol * abs(expected):
            return []
        return [f"{what}: expected {expected:.6g}, got {got:.6g}" if public
                else f"{what}: the number differs from the expected one"]
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return [f"{what}: expected {kind_of(expected)}, got {kind_of(got, public)}"]
        problems = []
        for i, (g, e) in enumerate(zip(got, expected)):
            problems += compare_values(g, e, tol, public, f"{what}[{i}]")
        return problems
    if expected is None:
        return [] if got is None else [f"{what}: expected None, got {kind_of(got, public)}"]
    if got == expected:
        return []
    return [f"{what}: expected {expected!r}, got {redact_text(repr(got), public, 200)}"]
