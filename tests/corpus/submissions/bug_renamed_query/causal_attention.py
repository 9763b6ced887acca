"""Causal attention with loops over rows and batch entries."""
import torch
import torch.nn as nn


def simple_causal_mask(context_length):
    mask = torch.zeros(context_length, context_length)
    for i in range(context_length):
        for j in range(i + 1):
            mask[i, j] = 1.0
    return mask


def mask_and_renormalize(attn_weights):
    T = attn_weights.shape[-1]
    rows = []
    for i in range(T):
        row = attn_weights[..., i, :]
        keep = torch.zeros(T, dtype=attn_weights.dtype, device=attn_weights.device)
        keep[: i + 1] = 1.0
        masked = row * keep
        rows.append(masked / masked.sum(dim=-1, keepdim=True))
    return torch.stack(rows, dim=-2)


def causal_attention_weights(attn_scores, d_k):
    T = attn_scores.shape[-1]
    rows = []
    for i in range(T):
        row = attn_scores[..., i, : i + 1] / d_k**0.5
        weights = torch.softmax(row, dim=-1)
        if i + 1 < T:
            pad = torch.zeros(*weights.shape[:-1], T - i - 1, dtype=weights.dtype, device=weights.device)
            weights = torch.cat([weights, pad], dim=-1)
        rows.append(weights)
    return torch.stack(rows, dim=-2)


def apply_dropout(attn_weights, p):
    dropout = nn.Dropout(p)  # a fresh module is in training mode
    return dropout(attn_weights)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, T, _ = x.shape
        queries = self.W_q(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        future = self.mask[:T, :T].bool()
        all_weights = []
        for n in range(b):
            scores = torch.matmul(queries[n], keys[n].T)
            scores = scores.masked_fill(future, float("-inf"))
            all_weights.append(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1))
        # Dropout once, on the whole [b, T, T] block, as the book's module does.
        weights = self.dropout(torch.stack(all_weights))
        outputs = [torch.matmul(weights[n], values[n]) for n in range(b)]
        return torch.stack(outputs)
