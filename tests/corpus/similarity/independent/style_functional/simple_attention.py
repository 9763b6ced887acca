import torch
import torch.nn.functional as F


def _dot_rows(a, b):
    # elementwise product summed over the feature axis
    return torch.mul(a, b).sum(dim=-1)


def attention_scores(inputs, query):
    return _dot_rows(inputs, query.unsqueeze(0))


def normalize_sum(scores):
    return torch.div(scores, torch.sum(scores))


def softmax_naive(x):
    e = x.exp()
    return e.div(e.sum(0))


def context_vector(inputs, attn_weights):
    return torch.sum(attn_weights.unsqueeze(-1) * inputs, dim=0)


def all_attention_scores(inputs):
    return torch.matmul(inputs, inputs.transpose(0, 1))


def all_attention_weights(attn_scores):
    return F.softmax(attn_scores, dim=1)


def all_context_vectors(inputs, attn_weights):
    return torch.matmul(attn_weights, inputs)
