"""A "likely:" line of the feedback as a misconception id: ``misconception:<id>`` tags and the class counts.

The judges already name a student's likely misconception in words ("likely: forgot the 1/sqrt(d_k)
scaling"); the same misconception reached from two steps (a known mistake reproduced, or what the values
say) gets one id here, so that the class dashboard can count it. Unknown wordings get an id made from
their own words, never lost.
"""
from __future__ import annotations

import re

#: (pattern on the lowercased hint, id, how the dashboard names it); the first match wins
KNOWN = [
    (r"by d_k instead of sqrt", "scaled-by-dk", "divided the scores by d_k instead of sqrt(d_k)"),
    (r"sqrt\(number of tokens\)", "scaled-by-tokens", "scaled by sqrt(number of tokens) instead of sqrt(d_k)"),
    (r"scaled after the softmax", "scaled-after-softmax", "scaled after the softmax instead of before"),
    (r"1/sqrt\(d_k\) scaling|scaling by sqrt\(d_k\) missing", "missing-scaling", "forgot the 1/sqrt(d_k) scaling"),
    (r"softmax over|wrong dim|columns sum to 1", "softmax-wrong-dim", "softmax over the wrong dim (columns instead of rows)"),
    (r"masked (after the softmax )?without renormaliz", "mask-without-renormalizing",
     "masked (after the softmax) without renormalizing the rows"),
    (r"upper triangle|triu instead", "upper-triangle-mask", "kept the upper triangle instead of the lower"),
    (r"no causal mask|not zero above the diagonal", "no-causal-mask", "no causal mask: tokens attend to the future"),
    (r"wrong corner", "mask-wrong-corner", "the mask is sliced from the wrong corner"),
    (r"heads merged|permute", "heads-merged-wrong-order", "heads merged with permute in the wrong order"),
    (r"dropout is applied in eval", "dropout-in-eval", "dropout is applied in eval mode too"),
    (r"queries and keys swapped", "queries-keys-swapped", "queries and keys swapped"),
    (r"out_proj", "out-proj-unused", "out_proj is created but never applied"),
    (r"transpose", "transposed", "transposed (a matrix product in the wrong order, or .T)"),
    (r"different order|specified order", "parameter-order", "parameters created in another order"),
    (r"rows do not sum to 1", "rows-not-normalized", "rows do not sum to 1 (a normalization missing)"),
    (r"contains nan", "nan-in-result", "NaN in the result"),
    (r"contains inf", "inf-in-result", "inf in the result (a mask not turned into 0)"),
    (r"expected ones times", "scaled-values", "values off by a constant factor"),
]
_LABELS = {mid: label for _, mid, label in KNOWN}


def identify(hint: str) -> str:
    """The id of a hint (the text after "likely: ")."""
    low = hint.lower()
    for pattern, mid, _ in KNOWN:
        if re.search(pattern, low):
            return mid
    words = re.findall(r"[a-z0-9]+", low.split(":", 1)[0])[:8]
    return "-".join(words) or "other"


def label(mid: str) -> str:
    """How the dashboard names an id: the known wording, else its own words."""
    return _LABELS.get(mid, mid.replace("-", " "))


def hints(feedback: str) -> list[str]:
    """The "likely:" hints of a feedback text, in order."""
    return [line.strip()[len("likely: "):] for line in (feedback or "").splitlines() if line.strip().startswith("likely: ")]


def ids(feedback: str) -> list[str]:
    """The misconception ids a feedback text names, each once, in order."""
    found: list[str] = []
    for hint in hints(feedback):
        mid = identify(hint)
        if mid not in found:
            found.append(mid)
    return found


def tags(feedback: str) -> list[str]:
    return [f"misconception:{mid}" for mid in ids(feedback)]


def from_tags(tags: list[str]) -> list[str]:
    return [t.split(":", 1)[1] for t in tags if t.startswith("misconception:")]
