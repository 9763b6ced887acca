import math

import torch
import torch.nn as nn


def stable_softmax(x, dim=-1):
    shifted = x - x.amax(dim=dim, keepdim=True)
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)


def future_positions(T, device=None):
    """True where the key index j comes after the query index i (j > i)."""
    idx = torch.arange(T, device=device)
    return idx.unsqueeze(0) > idx.unsqueeze(1)


def simple_causal_mask(context_length):
    return (~future_positions(context_length)).float()


def mask_and_renormalize(attn_weights):
    T = attn_weights.shape[-1]
    masked = torch.where(future_positions(T, attn_weights.device), torch.zeros_like(attn_weights), attn_weights)
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(attn_scores, d_k):
    T = attn_scores.shape[-1]
    masked = torch.where(
        future_positions(T, attn_scores.device),
        torch.full_like(attn_scores, -math.inf),
        attn_scores,
    )
    return stable_softmax(masked / math.sqrt(d_k), dim=-1)


def apply_dropout(attn_weights, p):
    return torch.dropout(attn_weights, p, True)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", future_positions(context_length).float())

    def forward(self, x):
        T = x.shape[-2]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries.matmul(keys.transpose(-2, -1)) / math.sqrt(keys.shape[-1])
        scores = scores.masked_fill(self.mask[:T, :T] != 0, -math.inf)
        weights = self.dropout(stable_softmax(scores, dim=-1))
        return weights.matmul(values)
