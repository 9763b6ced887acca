import torch
import torch.nn as nn
import torch.nn.functional as F


def simple_causal_mask(context_length):
    return torch.ones(context_length, context_length).tril()


def mask_and_renormalize(attn_weights):
    T = attn_weights.shape[-1]
    keep = torch.ones(T, T, dtype=attn_weights.dtype, device=attn_weights.device).tril()
    masked = torch.einsum("...ij,ij->...ij", attn_weights, keep)
    return masked / torch.einsum("...ij->...i", masked).unsqueeze(-1)


def causal_attention_weights(attn_scores, d_k):
    T = attn_scores.shape[-1]
    future = torch.ones(T, T, dtype=torch.bool, device=attn_scores.device).triu(diagonal=1)
    return F.softmax(attn_scores.masked_fill(future, float("-inf")) / d_k**0.5, dim=-1)


def apply_dropout(attn_weights, p):
    return F.dropout(attn_weights, p, training=True)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(diagonal=1))

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.einsum("bqd,bkd->bqk", q, k)
        scores = scores.masked_fill(self.mask[:T, :T].bool(), float("-inf"))
        weights = self.dropout(F.softmax(scores / k.shape[-1] ** 0.5, dim=-1))
        return torch.einsum("bqk,bkd->bqd", weights, v)
