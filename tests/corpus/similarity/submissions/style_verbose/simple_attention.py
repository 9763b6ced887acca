"""My answers for part 1 (simplified attention). I wrote everything step by step so I can follow it."""
import torch


def attention_scores(inputs, query):
    number_of_tokens = inputs.shape[0]
    result = torch.zeros(number_of_tokens, dtype=inputs.dtype)
    for token_index in range(number_of_tokens):
        token = inputs[token_index]
        total = 0.0
        for feature in range(token.shape[0]):
            total = total + token[feature] * query[feature]
        result[token_index] = total
    return result


def normalize_sum(scores):
    running_total = 0.0
    for value in scores:
        running_total = running_total + value
    return scores / running_total


def softmax_naive(x):
    numerator = torch.exp(x)
    denominator = torch.sum(numerator, dim=0)
    answer = numerator / denominator
    return answer


def context_vector(inputs, attn_weights):
    number_of_tokens = inputs.shape[0]
    answer = attn_weights[0] * inputs[0]
    for token_index in range(1, number_of_tokens):
        answer = answer + attn_weights[token_index] * inputs[token_index]
    return answer


def all_attention_scores(inputs):
    number_of_tokens = inputs.shape[0]
    rows = []
    for row_index in range(number_of_tokens):
        rows.append(attention_scores(inputs, inputs[row_index]))
    return torch.stack(rows, dim=0)


def all_attention_weights(attn_scores):
    numerator = torch.exp(attn_scores - attn_scores.max(dim=1, keepdim=True).values)
    denominator = numerator.sum(dim=1, keepdim=True)
    return numerator / denominator


def all_context_vectors(inputs, attn_weights):
    number_of_tokens = attn_weights.shape[0]
    rows = []
    for row_index in range(number_of_tokens):
        rows.append(context_vector(inputs, attn_weights[row_index]))
    return torch.stack(rows, dim=0)
