"""Part 4: multi-head attention."""
import math

import torch
import torch.nn as nn

from .causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        list_of_heads = []
        for head_number in range(num_heads):
            list_of_heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.heads = nn.ModuleList(list_of_heads)

    def forward(self, x):
        head_outputs = []
        for head in self.heads:
            head_outputs.append(head(x))
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
        upper_triangle = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", upper_triangle)

    def forward(self, x):
        batch_size = x.shape[0]
        number_of_tokens = x.shape[1]
        query_vectors = self.W_query(x).reshape(batch_size, number_of_tokens, self.num_heads, self.head_dim)
        key_vectors = self.W_key(x).reshape(batch_size, number_of_tokens, self.num_heads, self.head_dim)
        value_vectors = self.W_value(x).reshape(batch_size, number_of_tokens, self.num_heads, self.head_dim)
        query_vectors = torch.transpose(query_vectors, 1, 2)
        key_vectors = torch.transpose(key_vectors, 1, 2)
        value_vectors = torch.transpose(value_vectors, 1, 2)
        raw_scores = torch.matmul(query_vectors, torch.transpose(key_vectors, 2, 3))
        current_mask = self.mask[0:number_of_tokens, 0:number_of_tokens]
        hidden_scores = raw_scores.masked_fill(current_mask, float("-inf"))
        weights = torch.softmax(hidden_scores / math.sqrt(self.head_dim), dim=3)
        weights = self.dropout(weights)
        output = torch.matmul(weights, value_vectors)
        output = torch.transpose(output, 1, 2).reshape(batch_size, number_of_tokens, self.d_out)
        return self.out_proj(output)


def gpt2_small_attention():
    settings = {"d_in": 768, "d_out": 768, "context_length": 1024, "dropout": 0.0, "num_heads": 12}
    return MultiHeadAttention(**settings)
