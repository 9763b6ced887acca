import torch
import torch.nn as nn
import torch.nn.functional as F


def simple_causal_mask(context_length):
    return torch.tril(torch.ones(context_length, context_length))


def mask_and_renormalize(attn_weights):
    T = attn_weights.shape[-1]
    masked = attn_weights.masked_fill(
        torch.ones(T, T, dtype=torch.bool, device=attn_weights.device).triu(1), 0.0
    )
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(attn_scores, d_k):
    T = attn_scores.shape[-1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=attn_scores.device), diagonal=1)
    return F.softmax(attn_scores.masked_fill(future, -torch.inf) / d_k**0.5, dim=-1)


def apply_dropout(attn_weights, p):
    return F.dropout(attn_weights, p=p, training=True)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        T = x.shape[1]
        # attn_mask: True = may attend. SDPA drops out the attention weights, after the softmax.
        allowed = ~self.mask[:T, :T].bool()
        dropout_p = self.dropout.p if self.training else 0.0
        return F.scaled_dot_product_attention(
            self.W_query(x), self.W_key(x), self.W_value(x), attn_mask=allowed, dropout_p=dropout_p
        )
