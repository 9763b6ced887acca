"""Part 4: multi-head attention."""
import math

import torch
import torch.nn as nn

from .causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        list_of_heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for head_number in range(num_heads)]
        self.heads = nn.ModuleList(list_of_heads)

    def forward(self, x):
        head_outputs = [head(x) for head in self.heads]
        return torch.cat(head_outputs, dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out has to be a multiple of num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(in_features=d_in, out_features=d_out, bias=qkv_bias)
        self.W_key = nn.Linear(in_features=d_in, out_features=d_out, bias=qkv_bias)
        self.W_value = nn.Linear(in_features=d_in, out_features=d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(in_features=d_out, out_features=d_out, bias=True)
        self.dropout = nn.Dropout(p=dropout)
        up = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", up)

    def forward(self, x):
        batch_size = x.shape[0]
        num_tok = x.shape[1]
        qs = self.W_query(x).reshape(batch_size, num_tok, self.num_heads, self.head_dim)
        ks = self.W_key(x).reshape(batch_size, num_tok, self.num_heads, self.head_dim)
        vs = self.W_value(x).reshape(batch_size, num_tok, self.num_heads, self.head_dim)
        qs = torch.transpose(qs, 1, 2)
        ks = torch.transpose(ks, 1, 2)
        vs = torch.transpose(vs, 1, 2)
        sc = torch.matmul(qs, torch.transpose(ks, 2, 3))
        current_mask = self.mask[0:num_tok, 0:num_tok]
        msc = sc.masked_fill(current_mask, float("-inf"))
        wts = torch.softmax(msc / math.sqrt(self.head_dim), dim=3)
        wts = self.dropout(wts)
        o = torch.matmul(wts, vs)
        o = torch.transpose(o, 1, 2).reshape(batch_size, num_tok, self.d_out)
        return self.out_proj(o)


def gpt2_small_attention():
    settings = {"d_in": 768, "d_out": 768, "context_length": 1024, "dropout": 0.0, "num_heads": 12}
    return MultiHeadAttention(**settings)
