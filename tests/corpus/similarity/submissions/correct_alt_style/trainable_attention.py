import torch
import torch.nn as nn
import torch.nn.functional as F


def init_qkv(d_in, d_out):
    W_query, W_key, W_value = [nn.Parameter(torch.rand(d_in, d_out)) for _ in range(3)]
    return W_query, W_key, W_value


def project(x, W):
    # F.linear(x, A) computes x @ A.T, so pass W.T.
    return F.linear(x, W.T)


def attention_scores_for_query(query, keys):
    return torch.mv(keys, query)


def scaled_attention_weights(attn_scores, d_k):
    return F.softmax(attn_scores * d_k**-0.5, dim=attn_scores.dim() - 1)


def context_vector(attn_weights, values):
    return torch.mv(values.T, attn_weights)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        for name in ("W_query", "W_key", "W_value"):
            setattr(self, name, nn.Parameter(torch.rand(d_in, d_out)))

    def forward(self, x):
        queries = torch.mm(x, self.W_query)
        keys = torch.mm(x, self.W_key)
        values = torch.mm(x, self.W_value)
        weights = F.softmax(torch.mm(queries, keys.T) * keys.size(1) ** -0.5, dim=1)
        return torch.mm(weights, values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q = F.linear(x, self.W_query.weight, self.W_query.bias)
        k = F.linear(x, self.W_key.weight, self.W_key.bias)
        v = F.linear(x, self.W_value.weight, self.W_value.bias)
        weights = F.softmax(torch.mm(q, k.T) * k.size(1) ** -0.5, dim=1)
        return torch.mm(weights, v)


def transfer_weights(sa_v2, sa_v1):
    # load_state_dict copies into the existing parameters (under no_grad).
    sa_v1.load_state_dict(
        {
            "W_query": sa_v2.W_query.weight.T,
            "W_key": sa_v2.W_key.weight.T,
            "W_value": sa_v2.W_value.weight.T,
        }
    )


def dot_product_variance(dim, num_trials, generator):
    q = torch.randn(num_trials, dim, generator=generator)
    k = torch.randn(num_trials, dim, generator=generator)
    dots = torch.bmm(q.unsqueeze(1), k.unsqueeze(2)).flatten()
    var_before = dots.var(unbiased=False)
    var_after = var_before / dim  # Var(X / c) = Var(X) / c^2
    return var_before.item(), var_after.item()
