import torch
import torch.nn as nn
import torch.nn.functional as F


def init_qkv(d_in, d_out):
    W_query = nn.Parameter(torch.rand(d_in, d_out))
    W_key = nn.Parameter(torch.rand(d_in, d_out))
    W_value = nn.Parameter(torch.rand(d_in, d_out))
    return W_query, W_key, W_value


def project(x, W):
    return x @ W


def attention_scores_for_query(query, keys):
    return query @ keys.T


def scaled_attention_weights(attn_scores, d_k):
    return F.softmax(attn_scores / d_k**0.5, dim=-1)


def context_vector(attn_weights, values):
    return attn_weights @ values


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        # SDPA scales by 1/sqrt(q.size(-1)) = 1/sqrt(d_out) by default.
        return F.scaled_dot_product_attention(x @ self.W_query, x @ self.W_key, x @ self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return F.scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))


def transfer_weights(sa_v2, sa_v1):
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)


def dot_product_variance(dim, num_trials, generator):
    q = torch.randn(num_trials, dim, generator=generator)
    k = torch.randn(num_trials, dim, generator=generator)
    dots = (q * k).sum(dim=-1)
    return dots.var(unbiased=False).item(), (dots / dim**0.5).var(unbiased=False).item()
