"""Simplified self-attention: no trainable weights (book section 3.3).

Every step works on plain tensors: ``inputs`` is ``[T, d]`` (one row per token).
"""
import torch


def attention_scores(inputs, query):
    """Attention scores of one query against every input token.

    Shapes: inputs [T, d], query [d] -> scores [T], where scores[i] = dot(inputs[i], query).
    Hint: a loop of ``torch.dot`` works; so does one matrix-vector product.
    """
    return inputs @ query


def normalize_sum(scores):
    """Normalize scores so that they sum to 1, by dividing by their sum (not a softmax).

    Shapes: scores [T] -> weights [T].
    Hint: ``scores / scores.sum()``.
    """
    scores /= scores.sum()
    return scores


def softmax_naive(x):
    """The naive softmax along dim 0: exp(x) / sum(exp(x)).

    Shapes: x [T] -> [T]; every entry positive, summing to 1.
    Hint: ``torch.exp`` and ``.sum(dim=0)``; no max-subtraction is expected here.
    """
    return torch.exp(x) / torch.exp(x).sum(dim=0)


def context_vector(inputs, attn_weights):
    """Context vector: the attention-weighted sum of the input tokens.

    Shapes: inputs [T, d], attn_weights [T] -> context [d] = sum_i attn_weights[i] * inputs[i].
    Hint: a loop accumulating ``attn_weights[i] * inputs[i]``, or one product ``attn_weights @ inputs``.
    """
    return attn_weights @ inputs


def all_attention_scores(inputs):
    """Attention scores between every pair of tokens.

    Shapes: inputs [T, d] -> scores [T, T], where scores[i, j] = dot(inputs[i], inputs[j]).
    Hint: a double loop works; ``inputs @ inputs.T`` does it at once.
    """
    return inputs @ inputs.T


def all_attention_weights(attn_scores):
    """Attention weights for every query: softmax over the last dim, so each row sums to 1.

    Shapes: attn_scores [T, T] -> weights [T, T].
    Hint: ``torch.softmax(..., dim=-1)``; dim=0 would normalize columns instead of rows.
    """
    return torch.softmax(attn_scores, dim=-1)


def all_context_vectors(inputs, attn_weights):
    """All context vectors at once: row i is the weighted sum of the inputs with weights row i.

    Shapes: inputs [T, d], attn_weights [T, T] -> contexts [T, d].
    Hint: one matrix product; mind the order of the operands.
    """
    return attn_weights @ inputs
