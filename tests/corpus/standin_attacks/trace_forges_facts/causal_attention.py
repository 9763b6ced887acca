"""Causal (masked) attention: hide future tokens, plus dropout on the attention weights (book section 3.5)."""
import torch
import torch.nn as nn


def simple_causal_mask(context_length):
    """The simple causal mask: ones on and below the diagonal, zeros above.

    Shapes: -> [context_length, context_length].
    Hint: ``torch.tril(torch.ones(...))``.
    """
    return torch.tril(torch.ones(context_length, context_length))


def mask_and_renormalize(attn_weights):
    """Zero the weights above the diagonal, then renormalize each row to sum to 1.

    Shapes: attn_weights [..., T, T] -> [..., T, T].
    Hint: multiply by a lower-triangular mask, then divide by the row sums (``keepdim=True``).
    """
    T = attn_weights.shape[-1]
    mask = torch.tril(torch.ones(T, T, dtype=attn_weights.dtype, device=attn_weights.device))
    masked = attn_weights * mask
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(attn_scores, d_k):
    """Causal attention weights: scores above the diagonal set to -inf, then the scaled softmax.

    Shapes: attn_scores [..., T, T] -> weights [..., T, T]; row i has zeros after column i.
    Hint: ``torch.triu(..., diagonal=1)`` marks the future; ``masked_fill`` with ``-torch.inf``;
    then softmax(scores / sqrt(d_k)) over the last dim. Do not modify attn_scores in place.
    """
    T = attn_scores.shape[-1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=attn_scores.device), diagonal=1)
    masked = attn_scores.masked_fill(future, -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)


def apply_dropout(attn_weights, p):
    """Dropout on attention weights, exactly as ``nn.Dropout(p)`` applies it in training mode.

    Each entry is zeroed with probability p; the kept ones are scaled by 1 / (1 - p).
    Shapes: [...] -> same shape.
    Hint: ``nn.Dropout(p)`` (modules start in training mode) or ``torch.nn.functional.dropout``.
    """
    return torch.nn.functional.dropout(attn_weights, p=p, training=True)


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
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values
