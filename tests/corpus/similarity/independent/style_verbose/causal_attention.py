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
    kept_weights = attn_weights * lower_triangle
    row_totals = torch.sum(kept_weights, dim=-1, keepdim=True)
    return kept_weights / row_totals


def causal_attention_weights(attn_scores, d_k):
    size = attn_scores.shape[-1]
    upper_triangle = torch.triu(torch.ones(size, size, dtype=torch.bool), diagonal=1)
    hidden_scores = attn_scores.masked_fill(upper_triangle, float("-inf"))
    scale_factor = math.sqrt(d_k)
    return torch.softmax(hidden_scores / scale_factor, dim=-1)


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
        upper_triangle = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", upper_triangle)

    def forward(self, x):
        number_of_tokens = x.shape[1]
        query_vectors = self.W_query(x)
        key_vectors = self.W_key(x)
        value_vectors = self.W_value(x)
        raw_scores = torch.matmul(query_vectors, torch.transpose(key_vectors, 1, 2))
        current_mask = self.mask[0:number_of_tokens, 0:number_of_tokens]
        hidden_scores = raw_scores.masked_fill(current_mask, float("-inf"))
        key_size = key_vectors.shape[2]
        weights = torch.softmax(hidden_scores / math.sqrt(key_size), dim=2)
        weights = self.dropout(weights)
        output = torch.matmul(weights, value_vectors)
        return output
