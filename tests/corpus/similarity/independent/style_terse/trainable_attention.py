import torch as t
from torch.nn import Linear, Module, Parameter

P = lambda *s: Parameter(t.rand(*s))  # noqa: E731


def init_qkv(d_in, d_out): return P(d_in, d_out), P(d_in, d_out), P(d_in, d_out)
def project(x, W): return x.matmul(W)
def attention_scores_for_query(query, keys): return keys.matmul(query)
def scaled_attention_weights(attn_scores, d_k): return attn_scores.div(d_k ** .5).softmax(-1)
def context_vector(attn_weights, values): return attn_weights.matmul(values)


class SelfAttention_v1(Module):
    def __init__(s, d_in, d_out):
        super().__init__()
        s.W_query, s.W_key, s.W_value = P(d_in, d_out), P(d_in, d_out), P(d_in, d_out)

    def forward(s, x):
        q, k, v = x.matmul(s.W_query), x.matmul(s.W_key), x.matmul(s.W_value)
        return q.matmul(k.mT).div(k.size(-1) ** .5).softmax(-1).matmul(v)


class SelfAttention_v2(Module):
    def __init__(s, d_in, d_out, qkv_bias=False):
        super().__init__()
        s.W_query, s.W_key, s.W_value = (Linear(d_in, d_out, qkv_bias) for _ in range(3))

    def forward(s, x):
        q, k, v = s.W_query(x), s.W_key(x), s.W_value(x)
        return q.matmul(k.mT).div(k.size(-1) ** .5).softmax(-1).matmul(v)


def transfer_weights(sa_v2, sa_v1):
    with t.no_grad():
        [getattr(sa_v1, n).copy_(getattr(sa_v2, n).weight.mT) for n in ("W_query", "W_key", "W_value")]


def dot_product_variance(dim, num_trials, generator):
    d = t.randn(num_trials, dim, generator=generator).mul(t.randn(num_trials, dim, generator=generator)).sum(-1)
    return d.var(correction=0).item(), d.div(dim ** .5).var(correction=0).item()
