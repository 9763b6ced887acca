"""The misconceptions the feedback names, by id: the words a student reads, and the id that travels with them.

A "likely:" line is a ``Likely`` string: the line itself, carrying its misconception's id (``.mid``), so the
id goes from where the misconception is diagnosed (a known mistake reproduced, or what the values say) to a
count's tags (``misconception:<id>``), the class dashboard and the pages, and the dashboard names it in the
words the student read. Known mistakes (``autograder/unit/mistakes.py`` and the suites) are keyed by their
words; ``WORDS_TO_ID`` gives each its id; words the catalogue does not know get an id made of their words.
"""
from __future__ import annotations

import re

#: id -> how the feedback and the dashboard name it
MISCONCEPTIONS = {
    "missing-scaling": "forgot the 1/sqrt(d_k) scaling",
    "scaled-by-dk": "divided the scores by d_k instead of sqrt(d_k)",
    "scaled-by-tokens": "scores scaled by sqrt(number of tokens) instead of sqrt(d_k)",
    "scaled-after-softmax": "scaled after the softmax instead of before",
    "softmax-wrong-dim": "softmax over the wrong dim (columns instead of rows)",
    "mask-without-renormalizing": "masked after the softmax without renormalizing the rows",
    "upper-triangle-mask": "upper triangle instead of lower (torch.triu instead of torch.tril)",
    "no-causal-mask": "no causal mask: tokens attend to the future",
    "mask-hides-diagonal": ("the mask also hides each token from itself (triu(..., diagonal=0) or tril(..., "
                            "diagonal=-1)): mask only the future, j > i (triu(..., diagonal=1))"),
    "mask-wrong-corner": ("the mask is sliced from the wrong corner of the context_length mask (mask[:T, -T:]): rows "
                          "with every entry masked give NaN when T < context_length; slice mask[:num_tokens, :num_tokens]"),
    "queries-keys-swapped": "queries and keys swapped (keys @ queries.T)",
    "returned-weights": ("returned the attention weights instead of the context vectors: the output is the weights "
                         "applied to the values"),
    "mean-instead-of-sum": "took a mean where a sum was expected (your values are the expected ones divided by their count)",
    "normalized-by-total": ("divided by the sum of all entries instead of each row's own sum: "
                            "normalize with sum(dim=-1, keepdim=True)"),
    "weights-drawn-transposed": ("the weights are drawn transposed (torch.rand(d_out, d_in).T): draw "
                                 "torch.rand(d_in, d_out), so the seeded values land where specified"),
    "gradient-cut-one-path": ("the output is right but a gradient is not: the graph is cut on one path only "
                              "(a .detach() on the queries, keys, values or weights?)"),
    "heads-split-interleaved": ("heads split into interleaved columns (view(b, T, head_dim, num_heads)): head h takes "
                                "the contiguous columns h*head_dim to (h+1)*head_dim: view(b, T, num_heads, head_dim)"
                                ".transpose(1, 2)"),
    "num-tokens-from-batch": ("num_tokens read from the batch dimension (x.shape[0]): the mask is then sliced to the "
                              "batch size (with a batch of 1 it hides nothing); x is [batch, num_tokens, d_in]"),
    "dropout-on-values": ("dropout applied to the values (or the context) instead of the attention weights: dropout "
                          "belongs on the weights, after the softmax, before they meet the values"),
    "dropout-on-scores": ("dropout applied to the scores, before the softmax, instead of to the attention weights "
                          "after it"),
    "seed-in-forward": ("torch.manual_seed(...) inside forward: your dropout mask is the same on every call, and not "
                        "the one the caller's seed gives; seed outside the module, never in forward"),
    "transposed": "your result is the transpose of the expected one: check the order of a matrix product or .T",
    "rows-not-normalized": "your rows do not sum to 1: a normalization (softmax, or renormalizing after masking) is missing",
    "nan-in-result": "your result contains NaN: an exp that overflowed, a division by zero, or -inf - -inf?",
    "inf-in-result": "your result contains inf: a mask value (-inf) that was not turned into 0 by a softmax?",
    "scaled-values": "your values are the expected ones times a constant",
}

#: the words of known mistakes (as the suites and mistakes.py key them) -> their id
WORDS_TO_ID = {
    **{words: mid for mid, words in MISCONCEPTIONS.items()},
    "divided by d_k instead of sqrt(d_k)": "scaled-by-dk",
    "scaled by sqrt(number of tokens) instead of sqrt(d_k)": "scaled-by-tokens",
    "softmax over the first dim instead of the last": "softmax-wrong-dim",
    "masked without renormalizing the rows": "mask-without-renormalizing",
    "out_proj is created but never applied": "out-proj-unused",
    "heads not merged back in the right order (transpose before view missing)": "heads-merged-without-transpose",
    "scores scaled by sqrt(number of tokens) instead of sqrt(head_dim)": "scaled-by-tokens",
    "scores scaled by sqrt(d_out) instead of sqrt(head_dim)": "scaled-by-d-out",
    "scores scaled by sqrt(num_heads) instead of sqrt(head_dim)": "scaled-by-num-heads",
    "used a softmax instead of dividing by the sum": "softmax-instead-of-sum",
    "normalized by the sum without exp": "sum-without-exp",
}


class Likely(str):
    """A "likely: ..." line that knows its misconception's id (``.mid``)."""

    mid: str = "other"

    def __new__(cls, text: str, mid: str):
        line = super().__new__(cls, text)
        line.mid = mid
        return line


def misconception_id(words: str) -> str:
    """The id of a known mistake's words (or of a hint): the catalogue's, else made of its first words."""
    if words in WORDS_TO_ID:
        return WORDS_TO_ID[words]
    if words.startswith("heads merged with permute"):
        return "heads-merged-wrong-order"
    if words.startswith("dropout is applied in eval"):
        return "dropout-in-eval"
    return "-".join(re.findall(r"[a-z0-9]+", words.lower().split(":", 1)[0])[:8]) or "other"


def hint(mid: str, words: str | None = None) -> Likely:
    """A hint (the text after "likely: ") with its id; ``words`` when they say more than the catalogue's."""
    return Likely(words or MISCONCEPTIONS[mid], mid)


def likely_line(found: str) -> Likely:
    """``found`` (a hint) as its "likely: " line, keeping or finding its id."""
    return Likely("likely: " + found, getattr(found, "mid", None) or misconception_id(str(found)))


def ids_of(lines) -> list[str]:
    """The misconception ids of a judge's lines, each once, in order."""
    found: list[str] = []
    for line in lines:
        mid = getattr(line, "mid", None)
        if mid and mid not in found:
            found.append(mid)
    return found
