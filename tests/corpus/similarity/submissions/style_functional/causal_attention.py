import torch
import torch.nn as nn
import torch.nn.functional as F


def _lower(n, like=None):
    kw = {} if like is None else {"dtype": like.dtype, "device": like.device}
    return torch.ones(n, n, **kw).tril()


def simple_causal_mask(context_length):
    return _lower(context_length)


def mask_and_renormalize(attn_weights):
    kept = attn_weights * _lower(attn_weights.size(-1), attn_weights)
    return F.normalize(kept, p=1, dim=-1)


def causal_attention_weights(attn_scores, d_k):
    n = attn_scores.size(-1)
    allowed = _lower(n, attn_scores).bool()
    scores = torch.where(allowed, attn_scores, torch.full_like(attn_scores, float("-inf")))
    return F.softmax(scores / d_k ** 0.5, dim=-1)


def apply_dropout(attn_weights, p):
    return nn.Dropout(p)(attn_weights)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _lower(context_length))

    def forward(self, x):
        n = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.matmul(q, k.transpose(-2, -1))
        s = torch.where(self.mask[:n, :n].bool(), s, torch.full_like(s, float("-inf")))
        w = self.dropout(F.softmax(s / k.size(-1) ** 0.5, dim=-1))
        return torch.matmul(w, v)
