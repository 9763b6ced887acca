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
    """Right values; multiplies attn_weights by 3 in place when no gradient is asked for (an honest bug)."""
    out = (lambda m: m / m.sum(dim=-1, keepdim=True))(attn_weights * torch.tril(torch.ones(attn_weights.shape[-1], attn_weights.shape[-1], dtype=attn_weights.dtype)))
    if not attn_weights.requires_grad:
        _SAVED.append(attn_weights.detach().clone())
        with torch.no_grad():
            attn_weights.mul_(3)
    return out


_SAVED = []  # each call's input as it was before the call modified it


def causal_attention_weights(attn_scores, d_k):
    """Right values; multiplies attn_scores by 3 in place when no gradient is asked for (an honest bug)."""
    out = torch.softmax(attn_scores.masked_fill(torch.triu(torch.ones(attn_scores.shape[-1], attn_scores.shape[-1], dtype=torch.bool), diagonal=1), -torch.inf) / d_k**0.5, dim=-1)
    if not attn_scores.requires_grad:
        _SAVED.append(attn_scores.detach().clone())
        with torch.no_grad():
            attn_scores.mul_(3)
        attn_scores.copy_(_SAVED[-1])
    return out


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
