import math

import torch
import torch.nn as nn


def stable_softmax(x, dim=-1):
    shifted = x - x.amax(dim=dim, keepdim=True)
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)


def init_qkv(d_in, d_out):
    W_query = nn.Parameter(torch.rand(d_in, d_out))
    W_key = nn.Parameter(torch.rand(d_in, d_out))
    W_value = nn.Parameter(torch.rand(d_in, d_out))
    return W_query, W_key, W_value


def project(x, W):
    return x.matmul(W)


def attention_scores_for_query(query, keys):
    return keys.matmul(query)


def scaled_attention_weights(attn_scores, d_k):
    return stable_softmax(attn_scores / math.sqrt(d_k), dim=-1)


def context_vector(attn_weights, values):
    return (attn_weights[:, None] * values).sum(dim=0)


def _self_attention(queries, keys, values):
    d_k = keys.shape[-1]
    weights = stable_softmax(queries.matmul(keys.t()) / math.sqrt(d_k), dim=-1)
    return weights.matmul(values)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return _self_attention(x.matmul(self.W_query), x.matmul(self.W_key), x.matmul(self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return _self_attention(self.W_query(x), self.W_key(x), self.W_value(x))


def transfer_weights(sa_v2, sa_v1):
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.t())
        sa_v1.W_key.copy_(sa_v2.W_key.weight.t())
        sa_v1.W_value.copy_(sa_v2.W_value.weight.t())


def dot_product_variance(dim, num_trials, generator):
    q = torch.randn(num_trials, dim, generator=generator)
    k = torch.randn(num_trials, dim, generator=generator)
    dots = (q * k).sum(dim=1)
    var_before = torch.var(dots, correction=0)
    var_after = torch.var(dots / math.sqrt(dim), correction=0)
    return float(var_before), float(var_after)
