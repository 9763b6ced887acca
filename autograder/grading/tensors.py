"""Describe how two tensors differ, in terms a student can act on."""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float

    def close(self, got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
        """Element-wise closeness, NaN equal to NaN, computed in float64."""
        g, e = got.double(), expected.double()
        both_nan = torch.isnan(g) & torch.isnan(e)
        same_inf = torch.isinf(g) & torch.isinf(e) & (torch.sign(g) == torch.sign(e))
        diff = (g - e).abs()
        return both_nan | same_inf | (diff <= self.atol + self.rtol * e.abs())


def fmt_shape(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def fmt_dtype(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def fmt_values(t: torch.Tensor, limit: int = 8) -> str:
    flat = t.detach().double().flatten().tolist()
    text = ", ".join(f"{v:.4f}" for v in flat[:limit])
    return "[" + text + (", ..." if len(flat) > limit else "") + "]"


def fmt_index(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def describe_difference(got: torch.Tensor, expected: torch.Tensor, tol: Tolerance, show_values: bool) -> list[str]:
    """Lines saying where ``got`` differs from ``expected`` (same shape assumed)."""
    close = tol.close(got, expected)
    bad = (~close).nonzero()
    lines = [f"values differ at {len(bad)} of {expected.numel()} entries"]
    if expected.dim() == 0:
        if show_values:
            lines.append(f"expected {expected.item():.6g}, got {got.item():.6g}")
        return lines
    diff = (got.double() - expected.double()).abs().nan_to_num(nan=float("inf"))
    worst = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
    first = tuple(int(i) for i in bad[0].tolist())
    lines[0] += f"; first at {fmt_index(first)}, largest at {fmt_index(worst)}"
    if show_values:
        lines[0] += f" (|difference| {diff[worst].item():.4g})"
        row = worst[:-1]
        label = f"row {fmt_index(row)}" if row else "values"
        lines.append(f"expected {label}: {fmt_values(expected[row] if row else expected)}")
        lines.append(f"got      {label}: {fmt_values(got[row] if row else got)}")
    return lines


def same(got: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> bool:
    if tuple(got.shape) != tuple(expected.shape):
        return False
    # The same test as Tolerance.close (|got - expected| <= atol + rtol * |expected|, NaN equal to NaN,
    # infinities equal when of the same sign), in one call.
    if got.dtype == expected.dtype and got.dtype in (torch.float32, torch.float64):
        # Bit-for-bit equal is the common case for a correct answer, and 5x cheaper to establish.
        return torch.equal(got, expected) or torch.allclose(got, expected, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
    return torch.allclose(got.double(), expected.double(), rtol=tol.rtol, atol=tol.atol, equal_nan=True)
