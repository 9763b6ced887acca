"""Simplified self-attention, written with the loops the book uses."""
import torch


def attention_scores(inputs, query):
    scores = []
    for x_i in inputs:
        scores.append(torch.dot(x_i, query))
    return torch.stack(scores)


def normalize_sum(scores):
    total = scores.sum()
    return scores / total


def softmax_naive(x):
    exps = torch.exp(x)
    return exps / exps.sum(dim=0)


def context_vector(inputs, attn_weights):
    context = torch.zeros(inputs.shape[1], dtype=inputs.dtype, device=inputs.device)
    for i, x_i in enumerate(inputs):
        context = context + attn_weights[i] * x_i
    return context


def all_attention_scores(inputs):
    T = inputs.shape[0]
    # In-place writes into a fresh tensor are still tracked by autograd.
    scores = torch.empty(T, T, dtype=inputs.dtype, device=inputs.device)
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            scores[i, j] = torch.dot(x_i, x_j)
    return scores


def all_attention_weights(attn_scores):
    rows = [torch.softmax(row, dim=0) for row in attn_scores]
    return torch.stack(rows)


def all_context_vectors(inputs, attn_weights):
    rows = []
    for weights_i in attn_weights:
        context = torch.zeros(inputs.shape[1], dtype=inputs.dtype, device=inputs.device)
        for j, x_j in enumerate(inputs):
            context = context + weights_i[j] * x_j
        rows.append(context)
    return torch.stack(rows)
