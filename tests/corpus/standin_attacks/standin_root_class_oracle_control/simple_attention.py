import torch


def attention_scores(inputs, query):
    return torch.einsum("td,d->t", inputs, query)


def normalize_sum(scores):
    return scores / torch.einsum("t->", scores)


def softmax_naive(x):
    return torch.exp(x) / torch.exp(x).sum(dim=0)


def context_vector(inputs, attn_weights):
    return torch.einsum("t,td->d", attn_weights, inputs)


def all_attention_scores(inputs):
    return torch.einsum("id,jd->ij", inputs, inputs)


def all_attention_weights(attn_scores):
    return torch.softmax(attn_scores, dim=-1)


def all_context_vectors(inputs, attn_weights):
    return torch.einsum("ij,jd->id", attn_weights, inputs)
