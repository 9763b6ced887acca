"""Self-attention with trainable weights, one query at a time."""
import torch
import torch.nn as nn


def init_qkv(d_in, d_out):
    params = []
    for _ in ("query", "key", "value"):
        params.append(nn.Parameter(torch.rand(d_in, d_out)))
    return tuple(params)


def project(x, W):
    return torch.matmul(x, W)


def attention_scores_for_query(query, keys):
    return torch.stack([torch.dot(query, k) for k in keys])


def scaled_attention_weights(attn_scores, d_k):
    return torch.softmax(attn_scores / d_k**0.5, dim=-1)


def context_vector(attn_weights, values):
    context = torch.zeros(values.shape[1], dtype=values.dtype, device=values.device)
    for i in range(values.shape[0]):
        context = context + attn_weights[i] * values[i]
    return context


def _attend(queries, keys, values):
    """Loop over the queries: scores, scaled softmax and context vector for each one."""
    d_k = keys.shape[-1]
    contexts = []
    for q in queries:
        scores = attention_scores_for_query(q, keys)
        weights = scaled_attention_weights(scores, d_k)
        contexts.append(context_vector(weights, values))
    return torch.stack(contexts)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return _attend(project(x, self.W_query), project(x, self.W_key), project(x, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x))


def transfer_weights(sa_v2, sa_v1):
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            linear = getattr(sa_v2, name)
            target = getattr(sa_v1, name)
            for i in range(target.shape[0]):
                for j in range(target.shape[1]):
                    target[i, j] = linear.weight[j, i]


def dot_product_variance(dim, num_trials, generator):
    q = torch.randn(num_trials, dim, generator=generator)
    k = torch.randn(num_trials, dim, generator=generator)
    dots = torch.stack([torch.dot(q[t], k[t]) for t in range(num_trials)])
    scaled = dots / dim**0.5

    def population_variance(values):
        mean = values.mean()
        return ((values - mean) ** 2).mean().item()

    return population_variance(dots), population_variance(scaled)
