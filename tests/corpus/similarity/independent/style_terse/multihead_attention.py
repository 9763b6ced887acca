import torch as t
from torch.nn import Dropout, Linear, Module, ModuleList

from .causal_attention import CausalAttention


class MultiHeadAttentionWrapper(Module):
    def __init__(s, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        s.heads = ModuleList(map(lambda _: CausalAttention(d_in, d_out, context_length, dropout, qkv_bias), range(num_heads)))

    def forward(s, x): return t.cat(tuple(h(x) for h in s.heads), -1)


class MultiHeadAttention(Module):
    def __init__(s, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert_ok = d_out % num_heads == 0 or (_ for _ in ()).throw(ValueError("d_out % num_heads != 0"))
        s.d_out, s.num_heads, s.head_dim = d_out, num_heads, d_out // num_heads
        s.W_query, s.W_key, s.W_value = (Linear(d_in, d_out, qkv_bias) for _ in range(3))
        s.out_proj = Linear(d_out, d_out)
        s.dropout = Dropout(dropout)
        s.register_buffer("mask", t.ones(context_length, context_length, dtype=t.bool).triu(1))
        del assert_ok

    def forward(s, x):
        b, n, _ = x.shape
        heads = lambda y: y.view(b, n, s.num_heads, s.head_dim).transpose(1, 2)  # noqa: E731
        q, k, v = heads(s.W_query(x)), heads(s.W_key(x)), heads(s.W_value(x))
        w = s.dropout(q.matmul(k.mT).masked_fill(s.mask[:n, :n], -t.inf).div(s.head_dim ** .5).softmax(-1))
        return s.out_proj(w.matmul(v).transpose(1, 2).reshape(b, n, s.d_out))


def gpt2_small_attention(): return MultiHeadAttention(768, 768, 1024, 0.0, 12)
