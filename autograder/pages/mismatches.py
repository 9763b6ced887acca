"""The largest mismatches of a failing public case, as text: the accessible alternative to its pictures."""
from __future__ import annotations

import math


def _fmt(value: float, places: int = 4) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{places}f}"


def largest(evidence: dict, limit: int = 8) -> list[dict]:
    """Up to ``limit`` entries where yours and the expected differ most: index, expected, yours, difference."""
    import torch

    from autograder.feedback.compare import decimals_to_show

    expected, yours = evidence["expected"], evidence["yours"]
    diff = (yours - expected).abs()
    diff = torch.where(torch.isnan(diff) & ~(torch.isnan(yours) & torch.isnan(expected)), torch.inf, diff)
    diff = torch.nan_to_num(diff, nan=0.0)
    order = torch.argsort(diff.flatten(), descending=True)[:limit]
    found = []
    heads = expected.shape[0]
    for flat in order.tolist():
        h, rest = divmod(flat, expected.shape[1] * expected.shape[2])
        r, c = divmod(rest, expected.shape[2])
        if diff[h, r, c] == 0:
            break
        found.append(([h, r, c] if heads > 1 else [r, c], float(expected[h, r, c]), float(yours[h, r, c])))
    # as many decimals as it takes for each mismatch to show: never two equal numbers in a row said to differ
    places = decimals_to_show((e, y) for _, e, y in found if math.isfinite(e) and math.isfinite(y))
    return [{"index": index, "expected": _fmt(e, places), "yours": _fmt(y, places),
             "difference": _fmt(y - e, places) if math.isfinite(y - e) else "—"} for index, e, y in found]
