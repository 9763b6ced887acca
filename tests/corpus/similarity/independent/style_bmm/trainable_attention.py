import torch
from torch import nn


def init_qkv(d_in, d_out):
    W_q = nn.Parameter(torch.rand(d_in, d_out))
    W_k = nn.Parameter(torch.rand(d_in, d_out))
    W_v = nn.Parameter(torch.rand(d_in, d_out))
    return (W_q, W_k, W_v)


def project(x, W):
    return torch.tensordot(x, W, dims=1)


def attention_scores_for_query(query, keys):
    return (keys * query).sum(-1)


def scaled_attention_weights(attn_scores, d_k):
    return (attn_scores * d_k ** -0.5).softmax(dim=-1)


def context_vector(attn_weights, values):
    return values.T @ attn_weights


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand((d_in, d_out)))
        self.W_key = nn.Parameter(torch.rand((d_in, d_out)))
        self.W_value = nn.Parameter(torch.rand((d_in, d_out)))

    def forward(self, x):
        q = torch.tensordot(x, self.W_query, dims=1)
        k = torch.tensordot(x, self.W_key, dims=1)
        v = torch.tensordot(x, self.W_value, dims=1)
        att = torch.einsum("id,jd->ij", q, k) * k.shape[-1] ** -0.5
        return torch.einsum("ij,jd->id", att.softmax(-1), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = (layer(x) for layer in (self.W_query, self.W_key, self.W_value))
        att = torch.einsum("id,jd->ij", q, k) * k.shape[-1] ** -0.5
        return torch.einsum("ij,jd->id", att.softmax(-1), v)


def transfer_weights(sa_v2, sa_v1):
    pairs = [(sa_v1.W_query, sa_v2.W_query), (sa_v1.W_key, sa_v2.W_key), (sa_v1.W_value, sa_v2.W_value)]
    with torch.no_grad():
        for target, layer in pairs:
            target[:] = layer.weight.permute(1, 0)


def dot_product_variance(dim, num_trials, generator):
    q, k = (torch.randn(num_trials, dim, generator=generator) for _ in range(2))
    dots = torch.einsum("nd,nd->n", q, k)
    before = dots.var(unbiased=False)
    return before.item(), (before / dim).item()
