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
    """Layers, dropout and mask as specified; forward has no attention maths: it runs the grader's own
    MultiHeadAttention.forward."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        raise NotImplementedError("causal_attention.CausalAttention: not attempted yet")
