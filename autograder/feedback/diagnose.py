"""The likely misconception behind a wrong result: a known mistake it reproduces, or what its values say.

Every hint is a line of its own, prefixed with "likely: " where it is shown.
"""
from __future__ import annotations

import math

import torch

from .catalogue import hint, misconception_id
from .tolerance import LOOSE, same


def likely_from_values(got: torch.Tensor, expected: torch.Tensor) -> list[str]:
    """Misconceptions recognisable from the shapes and values of any result."""
    hints: list[str] = []
    if not got.dtype.is_floating_point or not expected.dtype.is_floating_point:
        return hints
    got, expected = got.detach(), expected.detach()
    if torch.isnan(got).any() and not torch.isnan(expected).any():
        hints.append(hint("mask-hides-diagonal") if _hides_diagonal(got, expected) else hint("nan-in-result"))
        return hints
    if torch.isinf(got).any() and not torch.isinf(expected).any():
        hints.append(hint("inf-in-result"))
        return hints
    if got.dim() >= 2 and got.shape == expected.shape[:-2] + expected.shape[-2:][::-1]:
        if same(got, expected.transpose(-1, -2), LOOSE):
            hints.append(hint("transposed"))
            return hints
    if got.shape != expected.shape:
        if (got.dim() >= 2 and got.shape[-1] == got.shape[-2] == expected.shape[-2]
                and got.shape[:-1] == expected.shape[:-1]):
            hints.append(hint("returned-weights"))  # [.., T, T] where [.., T, d_out] was expected
        return hints
    if _hides_diagonal(got, expected):
        return [hint("mask-hides-diagonal")]
    e, g = expected.double(), got.double()
    nonzero = e.abs() > 1e-8
    if nonzero.any():
        ratio = g[nonzero] / e[nonzero]
        r = ratio.mean().item()
        if ratio.numel() > 1 and (ratio - r).abs().max().item() < 1e-3 * max(1.0, abs(r)) and abs(r - 1) > 1e-3:
            words = f"your values are the expected ones times {r:.4g}"
            mid = "scaled-values"
            for name, value in (("sqrt(2)", math.sqrt(2)), ("1/sqrt(2)", 1 / math.sqrt(2)), ("2", 2.0), ("1/2", 0.5)):
                if abs(r - value) < 1e-3:
                    words += f" (= {name}): a scaling by sqrt(d_k) missing, doubled, or applied the wrong way?"
                    mid = "missing-scaling"
                    break
            else:
                n = round(1 / r) if r > 0 else 0
                if n >= 3 and abs(r * n - 1) < 1e-3:
                    words += f" (= 1/{n}): took a mean where a sum was expected?"
                    mid = "mean-instead-of-sum"
            hints.append(hint(mid, words))
    if e.dim() >= 2 and e.shape[-1] == e.shape[-2]:
        upper = torch.triu(torch.ones(e.shape[-2:], dtype=torch.bool), diagonal=1)
        if (e[..., upper].abs() < 1e-12).all() and (g[..., upper].abs() > 1e-6).any():
            hints.append(hint("no-causal-mask",
                              "your result is not zero above the diagonal: future tokens are not masked out"))
        rows_e = e.sum(-1)
        if torch.allclose(rows_e, torch.ones_like(rows_e), atol=1e-4):
            rows_g = g.sum(-1)
            cols_g = g.sum(-2)
            if (torch.allclose(cols_g, torch.ones_like(cols_g), atol=1e-4)
                    and not torch.allclose(rows_g, torch.ones_like(rows_g), atol=1e-4)):
                hints.append(hint("softmax-wrong-dim",
                                  "your columns sum to 1 instead of your rows: softmax (or the normalization) runs "
                                  "over the wrong dim"))
            elif not torch.allclose(rows_g, torch.ones_like(rows_g), atol=1e-4):
                whole = g.sum((-2, -1))
                if torch.allclose(whole, torch.ones_like(whole), atol=1e-4):
                    hints.append(hint("normalized-by-total"))
                else:
                    hints.append(hint("rows-not-normalized"))
    return hints


def _hides_diagonal(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Causal weights whose diagonal is masked too: zero (or NaN, a row with nothing left) on and above it."""
    if (got.shape != expected.shape or expected.dim() < 2 or expected.shape[-1] != expected.shape[-2]
            or expected.shape[-1] < 2):
        return False
    e, g = expected.double(), got.double().nan_to_num(nan=0.0)
    on_or_above = torch.triu(torch.ones(e.shape[-2:], dtype=torch.bool), diagonal=0)
    above = torch.triu(torch.ones(e.shape[-2:], dtype=torch.bool), diagonal=1)
    return bool((e[..., above].abs() < 1e-12).all() and (e.diagonal(dim1=-2, dim2=-1).abs() > 1e-6).all()
                and (g[..., on_or_above].abs() < 1e-12).all())


def likely_from_mistakes(got: torch.Tensor, mistakes: dict) -> list[str]:
    """The known mistake (label -> the result that mistake gives) that ``got`` reproduces, as one line: where several
    give the same values on this case, they are said together, none of them as the certain one."""
    found = [label for label, wrong in mistakes.items() if isinstance(wrong, torch.Tensor) and same(got, wrong, LOOSE)]
    if len(found) > 1:
        return [hint(misconception_id(found[0]), " or: ".join(found) + " (on this case each gives your values)")]
    return [hint(misconception_id(label), label) for label in found]


def likely(got: torch.Tensor, expected: torch.Tensor, mistakes: dict | None = None) -> list[str]:
    """A known mistake when ``got`` reproduces one, else what its values suggest."""
    return likely_from_mistakes(got, mistakes or {}) or likely_from_values(got, expected)
