import torch
import torch.nn as nn


def init_qkv(d_in, d_out):
    W_query = nn.Parameter(torch.rand(d_in, d_out))
    W_key = nn.Parameter(torch.rand(d_in, d_out))
    W_value = nn.Parameter(torch.rand(d_in, d_out))
    return W_query, W_key, W_value


def project(x, W):
    return torch.einsum("...i,io->...o", x, W)


def attention_scores_for_query(query, keys):
    return torch.einsum("d,td->t", query, keys)


def scaled_attention_weights(attn_scores, d_k):
    return torch.softmax(attn_scores / d_k**0.5, dim=-1)


def context_vector(attn_weights, values):
    return torch.einsum("t,td->d", attn_weights, values)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = torch.einsum("ti,io->to", x, self.W_query)
        k = torch.einsum("ti,io->to", x, self.W_key)
        v = torch.einsum("ti,io->to", x, self.W_value)
        scores = torch.einsum("qd,kd->qk", q, k)
        weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        return torch.einsum("qk,kd->qd", weights, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.einsum("qd,kd->qk", q, k)
        weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        return torch.einsum("qk,kd->qd", weights, v)


def transfer_weights(sa_v2, sa_v1):
    with torch.no_grad():
        sa_v1.W_query.copy_(torch.einsum("oi->io", sa_v2.W_query.weight))
        sa_v1.W_key.copy_(torch.einsum("oi->io", sa_v2.W_key.weight))
        sa_v1.W_value.copy_(torch.einsum("oi->io", sa_v2.W_value.weight))


def dot_product_variance(dim, num_trials, generator):
    q = torch.randn(num_trials, dim, generator=generator)
    k = torch.randn(num_trials, dim, generator=generator)
    dots = torch.einsum("nd,nd->n", q, k)
    return float(torch.var(dots, unbiased=False)), float(torch.var(dots / dim**0.5, unbiased=False))
