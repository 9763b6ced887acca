import torch as t
from torch.nn import Dropout, Linear, Module
from torch.nn.functional import dropout


def simple_causal_mask(context_length): return t.ones(context_length, context_length).tril()


def mask_and_renormalize(attn_weights):
    w = attn_weights.tril()
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(attn_scores, d_k):
    n = attn_scores.size(-1)
    return attn_scores.masked_fill(t.ones(n, n, dtype=t.bool, device=attn_scores.device).triu(1), -t.inf).div(d_k ** .5).softmax(-1)


def apply_dropout(attn_weights, p): return dropout(attn_weights, p, True)


class CausalAttention(Module):
    def __init__(s, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        s.d_out = d_out
        s.W_query, s.W_key, s.W_value = (Linear(d_in, d_out, qkv_bias) for _ in range(3))
        s.dropout = Dropout(dropout)
        s.register_buffer("mask", t.ones(context_length, context_length, dtype=t.bool).triu(1))

    def forward(s, x):
        n = x.size(1)
        q, k, v = s.W_query(x), s.W_key(x), s.W_value(x)
        return s.dropout(q.matmul(k.mT).masked_fill(s.mask[:n, :n], -t.inf).div(k.size(-1) ** .5).softmax(-1)).matmul(v)
