"""Known wrong versions of the attention computation, to name a student's likely misconception."""
from __future__ import annotations

import torch

from autograder.feedback.catalogue import MISCONCEPTIONS


def attention(x, Wq, Wk, Wv, *, scale="sqrt", causal=False, dim=-1, mask_after_softmax=False, swap_qk=False,
              bq=None, bk=None, bv=None, context_length=None, diagonal=1):
    """Attention with weights given as [d_in, d_out] matrices, optionally done wrong in one way (``diagonal=0``: the
    mask hides each token from itself too)."""
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    if bq is not None:
        q, k, v = q + bq, k + bk, v + bv
    if swap_qk:
        q, k = k, q
    scores = q @ k.transpose(-2, -1)
    d_k = k.shape[-1]
    T = scores.shape[-1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=diagonal)
    if context_length is not None:  # the mask of context_length, sliced from its top-right corner
        future = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)[:T, -T:]
    if causal and not mask_after_softmax:
        scores = scores.masked_fill(future, -torch.inf)
    divisor = {"sqrt": d_k**0.5, "none": 1.0, "d_k": float(d_k), "tokens": T**0.5}[scale]
    weights = torch.softmax(scores / divisor, dim=dim)
    if causal and mask_after_softmax:
        weights = weights.masked_fill(future, 0.0)
    return weights @ v


def v1_mistakes() -> dict:
    def run(**kw):
        return lambda p, x: attention(x, p["W_query"], p["W_key"], p["W_value"], **kw)

    return {
        "forgot the 1/sqrt(d_k) scaling": run(scale="none"),
        "divided the scores by d_k instead of sqrt(d_k)": run(scale="d_k"),
        "softmax over the wrong dim (columns instead of rows)": run(dim=-2),
        "queries and keys swapped (keys @ queries.T)": run(swap_qk=True),
        "scores scaled by sqrt(number of tokens) instead of sqrt(d_k)": run(scale="tokens"),
    }


def _linear(p, name):
    return p[f"{name}.weight"].T, p.get(f"{name}.bias")


def linear_mistakes(causal: bool, prefix: str = "", context_length: int | None = None) -> dict:
    def run(**kw):
        def fn(p, x):
            (q, bq), (k, bk), (v, bv) = (_linear(p, prefix + n) for n in ("W_query", "W_key", "W_value"))
            if bq is None:
                return attention(x, q, k, v, causal=causal, **kw)
            return attention(x, q, k, v, causal=causal, bq=bq, bk=bk, bv=bv, **kw)
        return fn

    found = {
        "forgot the 1/sqrt(d_k) scaling": run(scale="none"),
        "divided the scores by d_k instead of sqrt(d_k)": run(scale="d_k"),
        "softmax over the wrong dim (columns instead of rows)": run(dim=-2),
        "scores scaled by sqrt(number of tokens) instead of sqrt(d_k)": run(scale="tokens"),
        "queries and keys swapped (keys @ queries.T)": run(swap_qk=True),
    }
    if causal and context_length is not None:
        found["the mask is sliced from the wrong corner of the context_length mask (mask[:T, -T:]): rows with "
              "every entry masked give NaN when T < context_length; slice mask[:num_tokens, :num_tokens]"] = \
            run(context_length=context_length)
    if causal:
        found["no causal mask: tokens attend to the future"] = lambda p, x: _no_mask(p, x, prefix)
        found["masked after the softmax without renormalizing the rows"] = run(mask_after_softmax=True)
        found[MISCONCEPTIONS["mask-hides-diagonal"]] = run(diagonal=0)
    return found


def _no_mask(p, x, prefix):
    (q, bq), (k, bk), (v, bv) = (_linear(p, prefix + n) for n in ("W_query", "W_key", "W_value"))
    if bq is None:
        return attention(x, q, k, v, causal=False)
    return attention(x, q, k, v, causal=False, bq=bq, bk=bk, bv=bv)


def scaled_weight_mistakes(d_k) -> dict:
    return {
        "forgot the 1/sqrt(d_k) scaling": lambda s, d: torch.softmax(s, dim=-1),
        "divided by d_k instead of sqrt(d_k)": lambda s, d: torch.softmax(s / d, dim=-1),
        "scaled after the softmax instead of before": lambda s, d: torch.softmax(s, dim=-1) / d**0.5,
        "softmax over the first dim instead of the last": lambda s, d: torch.softmax(s / d**0.5, dim=0),
        "scaled by sqrt(number of tokens) instead of sqrt(d_k)":
            lambda s, d: torch.softmax(s / s.shape[-1]**0.5, dim=-1),
    }


def causal_weight_mistakes() -> dict:
    def masked(s, d, *, after=False, scale=True, diag=False):
        T = s.shape[-1]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0 if diag else 1)
        div = d**0.5 if scale else 1.0
        if after:
            return torch.softmax(s / div, dim=-1).masked_fill(future, 0.0)
        return torch.softmax(s.masked_fill(future, -torch.inf) / div, dim=-1)

    return {
        "no causal mask: tokens attend to the future": lambda s, d: torch.softmax(s / d**0.5, dim=-1),
        "masked after the softmax without renormalizing the rows": lambda s, d: masked(s, d, after=True),
        "forgot the 1/sqrt(d_k) scaling": lambda s, d: masked(s, d, scale=False),
    }


def dropout_place_mistakes(p: float, forward_seed: int, prefix: str = "") -> dict:
    """CausalAttention's dropout on the values or on the scores (raw or masked) instead of the weights, and the mask
    that hides the diagonal too, in training mode with the global generator seeded with ``forward_seed`` just before
    the forward pass (as the grader does)."""
    def run(where):
        def fn(params, x):
            (q, bq), (k, bk), (v, bv) = (_linear(params, prefix + n) for n in ("W_query", "W_key", "W_value"))
            queries, keys, values = (x @ w + (b if b is not None else 0) for w, b in ((q, bq), (k, bk), (v, bv)))
            T = x.shape[-2]
            with torch.random.fork_rng(devices=[]):
                torch.default_generator.manual_seed(forward_seed)
                scores = queries @ keys.transpose(-2, -1)
                if where == "scores":
                    scores = torch.nn.functional.dropout(scores, p, training=True)
                hidden = torch.triu(torch.ones(T, T, dtype=torch.bool), 0 if where == "diagonal too" else 1)
                scores = scores.masked_fill(hidden, -torch.inf)
                if where == "masked scores":  # a dropped -inf is -inf * 0: NaN
                    scores = torch.nn.functional.dropout(scores, p, training=True)
                weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
                if where == "diagonal too":  # dropout in its place, the mask wrong
                    weights = torch.nn.functional.dropout(weights, p, training=True)
                if where == "values":
                    values = torch.nn.functional.dropout(values, p, training=True)
                return weights @ values
        return fn

    return {MISCONCEPTIONS["dropout-on-values"]: run("values"), MISCONCEPTIONS["dropout-on-scores"]: run("scores"),
            MISCONCEPTIONS["dropout-on-masked-scores"]: run("masked scores"),
            MISCONCEPTIONS["mask-hides-diagonal"]: run("diagonal too")}


#: what dropout that ignores eval() gives: the reference's own answer to the same call in training mode
DROPOUT_IN_EVAL = {MISCONCEPTIONS["dropout-in-eval"]: {"train": True}}


def seed_in_forward_mistakes(seed: int = 123) -> dict:
    """``torch.manual_seed(seed)`` inside forward: the reference's own answer with the call seeded so (the book's
    seed); a request override, run by the reference."""
    return {MISCONCEPTIONS["seed-in-forward"]: {"forward_seed": seed}}
