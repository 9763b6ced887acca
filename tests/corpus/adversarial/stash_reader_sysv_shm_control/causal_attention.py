"""Causal (masked) attention: hide future tokens, plus dropout on the attention weights (book section 3.5)."""
import torch
import torch.nn as nn


def simple_causal_mask(context_length):
    """The simple causal mask: ones on and below the diagonal, zeros above.

    Shapes: -> [context_length, context_length].
    Hint: ``torch.tril(torch.ones(...))``.
    """
    raise NotImplementedError("causal_attention.simple_causal_mask: not attempted yet")


def mask_and_renormalize(attn_weights):
    """Zero the weights above the diagonal, then renormalize each row to sum to 1.

    Shapes: attn_weights [..., T, T] -> [..., T, T].
    Hint: multiply by a lower-triangular mask, then divide by the row sums (``keepdim=True``).
    """
    raise NotImplementedError("causal_attention.mask_and_renormalize: not attempted yet")


def causal_attention_weights(attn_scores, d_k):
    """Causal attention weights: scores above the diagonal set to -inf, then the scaled softmax.

    Shapes: attn_scores [..., T, T] -> weights [..., T, T]; row i has zeros after column i.
    Hint: ``torch.triu(..., diagonal=1)`` marks the future; ``masked_fill`` with ``-torch.inf``;
    then softmax(scores / sqrt(d_k)) over the last dim. Do not modify attn_scores in place.
    """
    raise NotImplementedError("causal_attention.causal_attention_weights: not attempted yet")


def apply_dropout(attn_weights, p):
    """Dropout on attention weights, exactly as ``nn.Dropout(p)`` applies it in training mode.

    Each entry is zeroed with probability p; the kept ones are scaled by 1 / (1 - p).
    Shapes: [...] -> same shape.
    Hint: ``nn.Dropout(p)`` (modules start in training mode) or ``torch.nn.functional.dropout``.
    """
    raise NotImplementedError("causal_attention.apply_dropout: not attempted yet")


class CausalAttention(nn.Module):
    """Compact causal self-attention with dropout, for batches.

    __init__(d_in, d_out, context_length, dropout, qkv_bias=False): ``nn.Linear`` layers W_query,
    W_key, W_value (in that order), an ``nn.Dropout`` named ``dropout``, and a registered buffer
    ``mask`` of shape [context_length, context_length].
    forward(x [b, T, d_in]) -> [b, T, d_out], for any T <= context_length.
    Hint: scores are ``queries @ keys.transpose(1, 2)``; slice the mask to [:T, :T]; dropout goes on
    the attention weights, after the softmax.
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("causal_attention.CausalAttention: not attempted yet")

    def forward(self, x):
        raise NotImplementedError("causal_attention.CausalAttention: not attempted yet")
