"""Multi-head attention, looping over the heads."""
import torch
import torch.nn as nn

from .causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        heads = []
        for _ in range(num_heads):
            heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.heads = nn.ModuleList(heads)

    def forward(self, x):
        outputs = []
        for head in self.heads:
            outputs.append(head(x))
        return torch.cat(outputs, dim=-1)


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
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, T, _ = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        future = self.mask[:T, :T].bool()
        hd = self.head_dim
        head_weights = []
        for h in range(self.num_heads):
            q = queries[:, :, h * hd:(h + 1) * hd]
            k = keys[:, :, h * hd:(h + 1) * hd]
            scores = torch.matmul(q, k.transpose(1, 2)).masked_fill(future, float("-inf"))
            head_weights.append(torch.softmax(scores / hd**0.5, dim=-1))
        # [b, num_heads, T, T]; dropout once over all heads together.
        weights = self.dropout(torch.stack(head_weights, dim=1))
        contexts = []
        for h in range(self.num_heads):
            v = values[:, :, h * hd:(h + 1) * hd]
            contexts.append(torch.matmul(weights[:, h], v))
        return self.out_proj(torch.cat(contexts, dim=-1))


def gpt2_small_attention():
    return MultiHeadAttention(d_in=768, d_out=768, context_length=1024, dropout=0.0, num_heads=12)
