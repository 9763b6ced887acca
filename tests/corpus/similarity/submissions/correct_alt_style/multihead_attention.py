import torch
import torch.nn as nn
import torch.nn.functional as F

from .causal_attention import CausalAttention

GPT2_SMALL = {"d_in": 768, "d_out": 768, "context_length": 1024, "dropout": 0.0, "num_heads": 12, "qkv_bias": False}


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=qkv_bias))

    def forward(self, x):
        return torch.concat(tuple(map(lambda head: head(x), self.heads)), dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        head_dim, remainder = divmod(d_out, num_heads)
        if remainder:
            raise ValueError("d_out must be a multiple of num_heads")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, head_dim
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=True)
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)))

    def forward(self, x):
        b, n, _ = x.shape
        shape = (b, n, self.num_heads, self.head_dim)
        q = self.W_query(x).reshape(shape).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(shape).permute(0, 2, 1, 3)
        v = self.W_value(x).reshape(shape).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.permute(0, 1, 3, 2))
        scores = scores.masked_fill(~self.mask[:n, :n], float("-inf"))
        weights = self.dropout(F.softmax(scores * self.head_dim**-0.5, dim=-1))
        context = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(b, n, self.d_out)
        return self.out_proj(context)


def gpt2_small_attention():
    return MultiHeadAttention(**GPT2_SMALL)
