"""The largest mismatches of a failing public case, as text: the accessible alternative to its pictures."""
from __future__ import annotations

import math


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.4f}"


def largest(evidence: dict, limit: int = 8) -> list[dict]:
    """Up to ``limit`` entries where yours and the expected differ most: index, expected, yours, difference."""
    import torch  # noqa: PLC0415 - imported on first use: torch is slow to load

    expected, yours = evidence["expected"], evidence["yours"]
    diff = (yours - expected).abs()
    diff = torch.where(torch.isnan(diff) & ~(torch.isnan(yours) & torch.isnan(expected)), torch.inf, diff)
    diff = torch.nan_to_num(diff, nan=0.0)
    order = torch.argsort(diff.flatten(), descending=True)[:limit]
    rows = []
    heads = expected.shape[0]
    for flat in order.tolist():
        h, rest = divmod(flat, expected.shape[1] * expected.shape[2])
        r, c = divmod(rest, expected.shape[2])
        if diff[h, r, c] == 0:
            break
        e, y = float(expected[h, r, c]), float(yours[h, r, c])
        index = [h, r, c] if heads > 1 else [r, c]
        rows.append({"index": index, "expected": _fmt(e), "yours": _fmt(y),
                     "difference": _fmt(y - e) if math.isfinite(y - e) else "—"})
    return rows
