import torch
import torch.nn as nn
import torch.nn.functional as F


def _param(*shape):
    return nn.Parameter(torch.rand(*shape))


def init_qkv(d_in, d_out):
    return tuple(_param(d_in, d_out) for _ in "qkv")


def project(x, W):
    return torch.matmul(x, W)


def attention_scores_for_query(query, keys):
    return torch.mv(keys, query)


def scaled_attention_weights(attn_scores, d_k):
    return F.softmax(attn_scores * (1.0 / d_k ** 0.5), dim=-1)


def context_vector(attn_weights, values):
    return torch.einsum("t,td->d", attn_weights, values)


def _attend(q, k, v):
    w = F.softmax(torch.matmul(q, k.transpose(-2, -1)) / k.size(-1) ** 0.5, dim=-1)
    return torch.matmul(w, v)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query, self.W_key, self.W_value = init_qkv(d_in, d_out)

    def forward(self, x):
        return _attend(project(x, self.W_query), project(x, self.W_key), project(x, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        make = lambda: nn.Linear(d_in, d_out, bias=qkv_bias)  # noqa: E731
        self.W_query = make()
        self.W_key = make()
        self.W_value = make()

    def forward(self, x):
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x))


def transfer_weights(sa_v2, sa_v1):
    for name in ("W_query", "W_key", "W_value"):
        getattr(sa_v1, name).data = getattr(sa_v2, name).weight.detach().t().clone()


def dot_product_variance(dim, num_trials, generator):
    q = torch.randn(num_trials, dim, generator=generator)
    k = torch.randn(num_trials, dim, generator=generator)
    d = torch.einsum("nd,nd->n", q, k)
    return float(torch.var(d, correction=0)), float(torch.var(d / torch.tensor(float(dim)).sqrt(), correction=0))
