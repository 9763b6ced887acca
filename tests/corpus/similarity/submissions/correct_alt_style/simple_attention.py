import torch
import torch.nn.functional as F


def attention_scores(inputs, query):
    return (inputs * query).sum(dim=-1)


def normalize_sum(scores):
    return torch.div(scores, torch.sum(scores))


def softmax_naive(x):
    numerator = torch.exp(x)
    denominator = torch.sum(numerator, dim=0, keepdim=True)
    return numerator / denominator


def context_vector(inputs, attn_weights):
    return torch.tensordot(attn_weights, inputs, dims=1)


def all_attention_scores(inputs):
    return torch.matmul(inputs, inputs.transpose(0, 1))


def all_attention_weights(attn_scores):
    return F.softmax(attn_scores, dim=1)


def all_context_vectors(inputs, attn_weights):
    return torch.matmul(attn_weights, inputs)
