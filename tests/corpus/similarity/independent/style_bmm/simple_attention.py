import torch


def attention_scores(inputs, query):
    return torch.einsum("td,d->t", inputs, query)


def normalize_sum(scores):
    return scores * scores.sum().reciprocal()


def softmax_naive(x):
    return torch.exp(x - torch.logsumexp(x, dim=0))


def context_vector(inputs, attn_weights):
    return (inputs * attn_weights[:, None]).sum(0)


def all_attention_scores(inputs):
    return torch.einsum("id,jd->ij", inputs, inputs)


def all_attention_weights(attn_scores):
    return attn_scores.softmax(-1)


def all_context_vectors(inputs, attn_weights):
    return torch.einsum("ij,jd->id", attn_weights, inputs)
