import torch
from torch import nn

from .causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([])
        self.heads.extend(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads))

    def forward(self, x):
        return torch.dstack([head(x) for head in self.heads])


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"{d_out} is not divisible by {num_heads}")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        idx = torch.arange(context_length)
        self.register_buffer("mask", idx[None, :] > idx[:, None])

    def forward(self, x):
        b, t, _ = x.shape
        h, hd = self.num_heads, self.head_dim
        q = self.W_query(x).view(b, t, h, hd).transpose(1, 2).reshape(b * h, t, hd)
        k = self.W_key(x).view(b, t, h, hd).transpose(1, 2).reshape(b * h, t, hd)
        v = self.W_value(x).view(b, t, h, hd).transpose(1, 2).reshape(b * h, t, hd)
        att = torch.bmm(q, k.transpose(1, 2)) * hd ** -0.5
        att = att.masked_fill(self.mask[:t, :t], float("-inf"))
        out = torch.bmm(self.dropout(att.softmax(-1)), v)
        out = out.view(b, h, t, hd).transpose(1, 2).reshape(b, t, self.d_out)
        return self.out_proj(out)


def gpt2_small_attention():
    return MultiHeadAttention(768, 768, 1024, 0.0, 12, False)
