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
                          "with every entry masked give NaN when T < context_length; slice mask[:num_tokens, "
                          ":num_tokens]"),
    "queries-keys-swapped": "queries and keys swapped (keys @ queries.T)",
    "returned-weights": ("returned the attention weights instead of the context vectors: the output is the weights "
                         "applied to the values"),
    "mean-instead-of-sum": "took a mean where a sum was expected (your values are the expected ones divided by their "
                           "count)",
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
    "dropout-missing-or-on-scores": ("dropout is missing, or applied to the scores before the softmax, which with "
                                     "one token changes nothing (the softmax of one score is 1 whatever dropout did "
                                     "to it): dropout belongs on the attention weights, after the softmax"),
    "dropout-in-eval": ("dropout is applied in eval mode too: it must follow self.training (nn.Dropout, or "
                        "F.dropout(..., training=self.training))"),
    "seed-in-forward": ("torch.manual_seed(...) inside forward: your dropout mask is the same on every call, and not "
                        "the one the caller's seed gives; seed outside the module, never in forward"),
    "transposed": "your result is the transpose of the expected one: check the order of a matrix product or .T",
    "rows-not-normalized": "your rows do not sum to 1: a normalization (softmax, or renormalizing after masking) is "
                           "missing",
    "nan-in-result": ("your result contains NaN: 0/0 or inf/inf (an exp that overflowed), -inf times 0 (a mask or "
                      "dropout multiplied into -inf scores), or a softmax over scores that are all -inf (a query "
                      "that sees no key)?"),
    "inf-in-result": "your result contains inf: a mask value (-inf) that was not turned into 0 by a softmax?",
    "scaled-values": "your values are the expected ones times a constant",
    "float32-by-default": ("your result is float32 for float64 inputs (its values are right): torch.zeros, "
                           "torch.empty, torch.ones and torch.tensor make float32 unless given a dtype; create the "
                           "result with dtype=<the input>.dtype (or torch.zeros_like), so that it keeps the input's "
                           "precision"),
    "divided-by-head-dim": "scores divided by head_dim instead of sqrt(head_dim)",
    "dropout-on-masked-scores": ("dropout applied to the masked scores, before the softmax: a dropped -inf becomes NaN "
                                 "(-inf times 0); dropout belongs on the attention weights, after the softmax"),
    # runtime errors, said in the student's terms (``runtime_errors.py``)
    "mask-not-sliced": ("the mask is not sliced to the input's length: it is [context_length, context_length] and "
                        "the scores are [num_tokens, num_tokens]; slice it: {mask}[:num_tokens, :num_tokens]"),
    "batch-transposed-with-T": ("{name}.T reverses every dimension of a batch ([b, num_tokens, d] becomes "
                                "[d, num_tokens, b]): transpose the last two only, {name}.transpose(1, 2) (or "
                                "{name}.mT)"),
    "view-not-contiguous": ("{name}.view(...) on a tensor that is not contiguous (a transpose leaves its memory in the "
                            "old order): {name}.contiguous().view(...), or {name}.reshape(...)"),
    "linear-weight-transposed": ("nn.Linear keeps its weight as [d_out, d_in]: call the layer ({layer}(x)), or "
                                 "multiply by {layer}.weight.T"),
    "matmul-shapes": ("the two sides of a matrix product do not line up (A @ B needs A's last dim equal to B's "
                      "second-to-last): check the order of the operands, and which one needs .transpose(-2, -1)"),
    "mixed-dtypes": ("float32 and float64 tensors meet in one operation: create your tensors with dtype=<the "
                     "input>.dtype (torch.zeros and torch.tensor make float32 unless told)"),
    "sum-without-keepdim": ("a sum without keepdim=True: the row sums lose their last dim and broadcast against the "
                            "wrong one; divide by .sum(dim=-1, keepdim=True)"),
    "assigned-before-super-init": ("a layer or parameter is assigned before super().__init__(): call "
                                   "super().__init__() first in __init__"),
    "assert-on-a-tuple": ("assert (condition, message) asserts a tuple, which is always true, so it never fails: "
                          "write assert condition, message (or raise ValueError(message))"),
    # a module's structure (``structure.py``: what its __init__ left unregistered)
    "modules-in-a-plain-list": ("{attribute} is a plain Python {container} of modules, which nn.Module does not "
                                "register: its layers' parameters are not your module's (and .eval() and .to() miss "
                                "them); "
                                "use nn.ModuleList([...]) (or nn.ModuleDict)"),
    "tensors-in-a-plain-list": ("{attribute} is a plain Python {container} of tensors, which nn.Module does not "
                                "register: use nn.ParameterList([nn.Parameter(...), ...])"),
    "plain-tensor-attribute": ("{attribute} is a plain tensor, not a parameter, so nn.Module does not register it: "
                               "wrap it, nn.Parameter(...)"),
    "buffer-not-registered": ("{attribute} is a plain tensor attribute, not a buffer: register it with "
                              "self.register_buffer({leaf!r}, ...), so that it moves with the module and is saved"),
    "not-copied": ("{param} still holds the values it was created with: the call never copies into it (copy_ the "
                   "transposed weight into it under torch.no_grad())"),
    "reshaped-not-transposed": ("{param} holds the right numbers in the wrong places: .reshape and .view keep the "
                                "entries in order; nn.Linear keeps its weight as [d_out, d_in], and the matrix you "
                                "need is its transpose, weight.T"),
    "no-parameters-at-init": ("your module has no parameters once it is created: create its layers in __init__ (after "
                              "super().__init__()), not in forward"),
}

#: the ids of hints read from values alone (``diagnose.likely_from_values``): said after a specific diagnosis (a
#: known mistake reproduced, an error or a warning recognised), never before it
GENERIC = frozenset({"nan-in-result", "inf-in-result", "scaled-values", "rows-not-normalized", "transposed",
                     "different-constructor", "gradient-cut-one-path", "matmul-shapes", "dropout-missing-or-on-scores"})

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
    "scores divided by head_dim instead of sqrt(head_dim)": "divided-by-head-dim",
}


class Likely(str):
    """A "likely: ..." line that knows its misconception's id (``.mid``)."""

    mid: str = "other"

    def __new__(cls, text: str, mid: str):
        line = super().__new__(cls, text)
        line.mid = mid
        return line

    def __getnewargs__(self):  # pickled with its id (a batch job's outcomes cross processes)
        return str(self), self.mid


def misconception_id(words: str) -> str:
    """The id of a known mistake's words (or of a hint): the catalogue's, else made of its first words."""
    if words in WORDS_TO_ID:
        return WORDS_TO_ID[words]
    if words.startswith("heads merged with permute"):
        return "heads-merged-wrong-order"
    if words.startswith("dropout is applied in eval"):
        return "dropout-in-eval"
    return "-".join(re.findall(r"[a-z0-9]+", words.lower().split(":", 1)[0])[:8]) or "other"


def hint(mid: str, words: str | None = None, **names) -> Likely:
    """A hint (the text after "likely: ") with its id; ``words`` when they say more than the catalogue's; ``names``
    fill the catalogue's ``{placeholders}`` with the student's own names (``name="keys"``)."""
    if words:
        return Likely(words, mid)
    return Likely(MISCONCEPTIONS[mid].format(**names) if names else MISCONCEPTIONS[mid], mid)


#: what a catalogue entry's ``{placeholders}`` read where no student's name fills them (the class dashboard)
ANY_NAMES = {"name": "x", "mask": "self.mask.bool()", "layer": "self.W_query", "container": "list", "leaf": "mask",
             "param": "a parameter", "attribute": "an attribute"}


def words_of(mid: str) -> str:
    """How the catalogue names ``mid`` for the whole class: its words, any placeholder filled with a generic name."""
    return MISCONCEPTIONS[mid].format(**ANY_NAMES)


def specific_first(hints) -> list:
    """``hints`` (lines or hint words, each knowing its id), the specific diagnoses before those read from values
    alone (``GENERIC``), each group in its order: the page and the terminal lead with the most specific."""
    hints = list(hints)
    return ([h for h in hints if getattr(h, "mid", None) not in GENERIC]
            + [h for h in hints if getattr(h, "mid", None) in GENERIC])


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
