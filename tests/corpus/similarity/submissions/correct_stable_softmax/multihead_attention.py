import math

import torch
import torch.nn as nn

from .causal_attention import CausalAttention


def stable_softmax(x, dim=-1):
    shifted = x - x.amax(dim=dim, keepdim=True)
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        idx = torch.arange(context_length)
        self.register_buffer("mask", (idx[None, :] > idx[:, None]).float())

    def _heads(self, t):
        b, T, _ = t.shape
        return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, T, _ = x.shape
        q = self._heads(self.W_query(x))
        k = self._heads(self.W_key(x))
        v = self._heads(self.W_value(x))
        scores = q.matmul(k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(self.mask[:T, :T] != 0, -math.inf)
        weights = self.dropout(stable_softmax(scores, dim=-1))
        context = weights.matmul(v).transpose(1, 2).contiguous().view(b, T, self.d_out)
        return self.out_proj(context)


def gpt2_small_attention():
    return MultiHeadAttention(d_in=768, d_out=768, context_length=1024, dropout=0.0, num_heads=12)
