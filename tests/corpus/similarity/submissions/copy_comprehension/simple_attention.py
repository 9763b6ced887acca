"""My answers for part 1 (simplified attention). I wrote everything step by step so I can follow it."""
import torch


def attention_scores(inputs, query):
    num_tok = inputs.shape[0]
    out = torch.zeros(num_tok, dtype=inputs.dtype)
    for idx in range(num_tok):
        token = inputs[idx]
        total = 0.0
        for feature in range(token.shape[0]):
            total = total + token[feature] * query[feature]
        out[idx] = total
    return out


def normalize_sum(scores):
    acc = sum([value for value in scores])
    return scores / acc


def softmax_naive(x):
    top = torch.exp(x)
    bottom = torch.sum(top, dim=0)
    res = top / bottom
    return res


def context_vector(inputs, attn_weights):
    num_tok = inputs.shape[0]
    res = attn_weights[0] * inputs[0]
    for idx in range(1, num_tok):
        res = res + attn_weights[idx] * inputs[idx]
    return res


def all_attention_scores(inputs):
    num_tok = inputs.shape[0]
    lines = [attention_scores(inputs, inputs[row_index]) for row_index in range(num_tok)]
    return torch.stack(lines, dim=0)


def all_attention_weights(attn_scores):
    top = torch.exp(attn_scores - attn_scores.max(dim=1, keepdim=True).values)
    bottom = top.sum(dim=1, keepdim=True)
    return top / bottom


def all_context_vectors(inputs, attn_weights):
    num_tok = attn_weights.shape[0]
    lines = [context_vector(inputs, attn_weights[row_index]) for row_index in range(num_tok)]
    return torch.stack(lines, dim=0)
