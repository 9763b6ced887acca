"""The likely misconception behind a wrong result: a known mistake it reproduces, or what its values say.

Every hint is a line of its own, prefixed with "likely: " where it is shown.
"""
from __future__ import annotations

import math

import torch

from .tolerance import LOOSE, same


def likely_from_values(got: torch.Tensor, expected: torch.Tensor) -> list[str]:
    """Misconceptions recognisable from the shapes and values of any result."""
    hints: list[str] = []
    if not got.dtype.is_floating_point or not expected.dtype.is_floating_point:
        return hints
    got, expected = got.detach(), expected.detach()
    if torch.isnan(got).any() and not torch.isnan(expected).any():
        hints.append("your result contains NaN: an exp that overflowed, a division by zero, or -inf - -inf?")
        return hints
    if torch.isinf(got).any() and not torch.isinf(expected).any():
        hints.append("your result contains inf: a mask value (-inf) that was not turned into 0 by a softmax?")
        return hints
    if got.dim() >= 2 and got.shape == expected.shape[:-2] + expected.shape[-2:][::-1]:
        if same(got, expected.transpose(-1, -2), LOOSE):
            hints.append("your result is the transpose of the expected one: check the order of a matrix product or .T")
            return hints
    if got.shape != expected.shape:
        return hints
    e, g = expected.double(), got.double()
    nonzero = e.abs() > 1e-8
    if nonzero.any():
        ratio = g[nonzero] / e[nonzero]
        r = ratio.mean().item()
        if ratio.numel() > 1 and (ratio - r).abs().max().item() < 1e-3 * max(1.0, abs(r)) and abs(r - 1) > 1e-3:
            hint = f"your values are the expected ones times {r:.4g}"
            for name, value in (("sqrt(2)", math.sqrt(2)), ("1/sqrt(2)", 1 / math.sqrt(2)), ("2", 2.0), ("1/2", 0.5)):
                if abs(r - value) < 1e-3:
                    hint += f" (= {name}): a scaling by sqrt(d_k) missing, doubled, or applied the wrong way?"
                    break
            hints.append(hint)
    if e.dim() >= 2 and e.shape[-1] == e.shape[-2]:
        upper = torch.triu(torch.ones(e.shape[-2:], dtype=torch.bool), diagonal=1)
        if (e[..., upper].abs() < 1e-12).all() and (g[..., upper].abs() > 1e-6).any():
            hints.append("your result is not zero above the diagonal: future tokens are not masked out")
        rows_e = e.sum(-1)
        if torch.allclose(rows_e, torch.ones_like(rows_e), atol=1e-4):
            rows_g = g.sum(-1)
            cols_g = g.sum(-2)
            if torch.allclose(cols_g, torch.ones_like(cols_g), atol=1e-4) and not torch.allclose(rows_g, torch.ones_like(rows_g), atol=1e-4):
                hints.append("your columns sum to 1 instead of your rows: softmax (or the normalization) runs over the wrong dim")
            elif not torch.allclose(rows_g, torch.ones_like(rows_g), atol=1e-4):
                hints.append("your rows do not sum to 1: a normalization (softmax, or renormalizing after masking) is missing")
    return hints


def likely_from_mistakes(got: torch.Tensor, mistakes: dict) -> list[str]:
    """The labels of the known mistakes (label -> the result that mistake gives) that ``got`` reproduces."""
    return [label for label, wrong in mistakes.items()
            if isinstance(wrong, torch.Tensor) and same(got, wrong, LOOSE)]


def likely(got: torch.Tensor, expected: torch.Tensor, mistakes: dict | None = None) -> list[str]:
    """A known mistake when ``got`` reproduces one, else what its values suggest."""
    return likely_from_mistakes(got, mistakes or {}) or likely_from_values(got, expected)
