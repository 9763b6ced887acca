import torch


def attention_scores(inputs, query):
    return inputs @ query


def normalize_sum(scores):
    return scores / scores.sum()


def softmax_naive(x):
    return torch.exp(x) / torch.sum(torch.exp(x), dim=0)


def context_vector(inputs, attn_weights):
    return attn_weights @ inputs


def all_attention_scores(inputs):
    return inputs @ inputs.T


def all_attention_weights(attn_scores):
    return attn_scores.softmax(dim=-1)


def all_context_vectors(inputs, attn_weights):
    return attn_weights @ inputs
