"""Part 3: causal attention."""
import math

import torch
import torch.nn as nn


def simple_causal_mask(context_length):
    mask = torch.zeros(context_length, context_length)
    for row in range(context_length):
        for column in range(row + 1):
            mask[row, column] = 1.0
    return mask


def mask_and_renormalize(attn_weights):
    size = attn_weights.shape[-1]
    lower_triangle = torch.tril(torch.ones(size, size, dtype=attn_weights.dtype))
    kept = attn_weights * lower_triangle
    row_totals = torch.sum(kept, dim=-1, keepdim=True)
    return kept / row_totals


def causal_attention_weights(attn_scores, d_k):
    size = attn_scores.shape[-1]
    up = torch.triu(torch.ones(size, size, dtype=torch.bool), diagonal=1)
    msc = attn_scores.masked_fill(up, float("-inf"))
    scale_factor = math.sqrt(d_k)
    return torch.softmax(msc / scale_factor, dim=-1)


def apply_dropout(attn_weights, p):
    dropout_layer = nn.Dropout(p=p)
    dropout_layer.train()
    return dropout_layer(attn_weights)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(in_features=d_in, out_features=d_out, bias=qkv_bias)
        self.W_key = nn.Linear(in_features=d_in, out_features=d_out, bias=qkv_bias)
        self.W_value = nn.Linear(in_features=d_in, out_features=d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(p=dropout)
        up = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", up)

    def forward(self, x):
        num_tok = x.shape[1]
        qs = self.W_query(x)
        ks = self.W_key(x)
        vs = self.W_value(x)
        sc = torch.matmul(qs, torch.transpose(ks, 1, 2))
        current_mask = self.mask[0:num_tok, 0:num_tok]
        msc = sc.masked_fill(current_mask, float("-inf"))
        key_size = ks.shape[2]
        wts = torch.softmax(msc / math.sqrt(key_size), dim=2)
        wts = self.dropout(wts)
        o = torch.matmul(wts, vs)
        return o
