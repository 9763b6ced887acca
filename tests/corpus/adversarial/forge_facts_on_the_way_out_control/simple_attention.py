"""Simplified self-attention: no trainable weights (book section 3.3).

Every step works on plain tensors: ``inputs`` is ``[T, d]`` (one row per token).
"""
import torch


def attention_scores(inputs, query):
    """Right values; multiplies query by 3 in place when no gradient is asked for (an honest bug)."""
    out = inputs @ query
    if not query.requires_grad:
        _SAVED.append(query.detach().clone())
        with torch.no_grad():
            query.mul_(3)
    return out


_SAVED = []  # each call's input as it was before the call modified it


def normalize_sum(scores):
    """Right values; multiplies scores by 3 in place when no gradient is asked for (an honest bug)."""
    out = scores / scores.sum()
    if not scores.requires_grad:
        _SAVED.append(scores.detach().clone())
        with torch.no_grad():
            scores.mul_(3)
    return out


def softmax_naive(x):
    """Right values; multiplies x by 3 in place when no gradient is asked for (an honest bug)."""
    out = torch.exp(x) / torch.exp(x).sum(dim=0)
    if not x.requires_grad:
        _SAVED.append(x.detach().clone())
        with torch.no_grad():
            x.mul_(3)
    return out


def context_vector(inputs, attn_weights):
    """Right values; multiplies attn_weights by 3 in place when no gradient is asked for (an honest bug)."""
    out = attn_weights @ inputs
    if not attn_weights.requires_grad:
        _SAVED.append(attn_weights.detach().clone())
        with torch.no_grad():
            attn_weights.mul_(3)
    return out


def all_attention_scores(inputs):
    """Right values; multiplies inputs by 3 in place when no gradient is asked for (an honest bug)."""
    out = inputs @ inputs.T
    if not inputs.requires_grad:
        _SAVED.append(inputs.detach().clone())
        with torch.no_grad():
            inputs.mul_(3)
    return out


def all_attention_weights(attn_scores):
    """Right values; multiplies attn_scores by 3 in place when no gradient is asked for (an honest bug)."""
    out = torch.softmax(attn_scores, dim=-1)
    if not attn_scores.requires_grad:
        _SAVED.append(attn_scores.detach().clone())
        with torch.no_grad():
            attn_scores.mul_(3)
    return out


def all_context_vectors(inputs, attn_weights):
    """All context vectors at once: row i is the weighted sum of the inputs with weights row i.

    Shapes: inputs [T, d], attn_weights [T, T] -> contexts [T, d].
    Hint: one matrix product; mind the order of the operands.
    """
    return attn_weights @ inputs
