import torch
from torch import nn


def simple_causal_mask(context_length):
    idx = torch.arange(context_length)
    return (idx[:, None] >= idx[None, :]).float()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    idx = torch.arange(n, device=attn_weights.device)
    keep = (idx[:, None] >= idx[None, :]).to(attn_weights.dtype)
    w = attn_weights * keep
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(attn_scores, d_k):
    n = attn_scores.shape[-1]
    idx = torch.arange(n, device=attn_scores.device)
    future = idx[None, :] > idx[:, None]
    bias = torch.zeros(n, n, dtype=attn_scores.dtype, device=attn_scores.device).masked_fill(future, float("-inf"))
    return ((attn_scores + bias) * d_k ** -0.5).softmax(-1)


def apply_dropout(attn_weights, p):
    return torch.dropout(attn_weights, p, True)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        idx = torch.arange(context_length)
        self.register_buffer("mask", idx[None, :] > idx[:, None])

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        att = torch.bmm(q, k.transpose(1, 2)) * k.shape[-1] ** -0.5
        att = att.masked_fill(self.mask[:t, :t], float("-inf"))
        return torch.bmm(self.dropout(att.softmax(-1)), v)
