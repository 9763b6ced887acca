import torch
import torch.nn as nn
import torch.nn.functional as F

from .causal_attention import CausalAttention


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
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
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

        def split(t):
            return t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)

        context = F.scaled_dot_product_attention(
            split(self.W_query(x)),
            split(self.W_key(x)),
            split(self.W_value(x)),
            is_causal=True,
            dropout_p=self.dropout.p if self.training else 0.0,
        )
        return self.out_proj(context.transpose(1, 2).reshape(b, T, self.d_out))


def gpt2_small_attention():
    return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12, qkv_bias=False)
