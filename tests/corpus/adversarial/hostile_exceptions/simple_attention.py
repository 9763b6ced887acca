"""Simplified self-attention: no trainable weights (book section 3.3).

Every step works on plain tensors: ``inputs`` is ``[T, d]`` (one row per token).
"""
import torch


class _Meta(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name for you")


class _Hostile(Exception, metaclass=_Meta):
    def __str__(self):
        raise RuntimeError("no str for you")

    def __repr__(self):
        raise RuntimeError("no repr for you")


def attention_scores(inputs, query):
    """Raises an exception that cannot be described."""
    raise _Hostile()


class _Looping(Exception):
    def __str__(self):
        while True:
            pass

    __repr__ = __str__


def normalize_sum(scores):
    """Raises an exception whose message never ends."""
    raise _Looping()


class _BadStr(str):
    def __getitem__(self, index):
        raise RuntimeError("no slicing for you")

    def __len__(self):
        raise RuntimeError("no len for you")


class _SlyError(Exception):
    def __str__(self):
        return _BadStr("sly")


def softmax_naive(x):
    """Raises an exception whose message is a hostile str subclass."""
    raise _SlyError()


def context_vector(inputs, attn_weights):
    """Context vector: the attention-weighted sum of the input tokens.

    Shapes: inputs [T, d], attn_weights [T] -> context [d] = sum_i attn_weights[i] * inputs[i].
    Hint: a loop accumulating ``attn_weights[i] * inputs[i]``, or one product ``attn_weights @ inputs``.
    The result has the inputs' dtype (float32 or float64): ``torch.zeros(d, dtype=inputs.dtype)``.
    """
    return attn_weights @ inputs


def all_attention_scores(inputs):
    """Attention scores between every pair of tokens.

    Shapes: inputs [T, d] -> scores [T, T], where scores[i, j] = dot(inputs[i], inputs[j]).
    Hint: a double loop works; ``inputs @ inputs.T`` does it at once. The result has the inputs' dtype
    (float32 or float64): a loop filling ``torch.empty(T, T)`` needs ``dtype=inputs.dtype``.
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
