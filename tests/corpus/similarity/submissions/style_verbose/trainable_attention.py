"""Part 2: self-attention with trainable weights."""
import math

import torch
import torch.nn as nn


def init_qkv(d_in, d_out):
    query_matrix = torch.rand(d_in, d_out)
    key_matrix = torch.rand(d_in, d_out)
    value_matrix = torch.rand(d_in, d_out)
    return nn.Parameter(query_matrix), nn.Parameter(key_matrix), nn.Parameter(value_matrix)


def project(x, W):
    projected = torch.matmul(x, W)
    return projected


def attention_scores_for_query(query, keys):
    keys_transposed = torch.transpose(keys, 0, 1)
    scores = torch.matmul(query, keys_transposed)
    return scores


def scaled_attention_weights(attn_scores, d_k):
    scale_factor = math.sqrt(d_k)
    scaled_scores = attn_scores / scale_factor
    weights = torch.softmax(scaled_scores, dim=-1)
    return weights


def context_vector(attn_weights, values):
    number_of_values = values.shape[0]
    answer = attn_weights[0] * values[0]
    for value_index in range(1, number_of_values):
        answer = answer + attn_weights[value_index] * values[value_index]
    return answer


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        query_vectors = torch.matmul(x, self.W_query)
        key_vectors = torch.matmul(x, self.W_key)
        value_vectors = torch.matmul(x, self.W_value)
        key_size = key_vectors.shape[1]
        raw_scores = torch.matmul(query_vectors, torch.transpose(key_vectors, 0, 1))
        weights = torch.softmax(raw_scores / math.sqrt(key_size), dim=1)
        output = torch.matmul(weights, value_vectors)
        return output


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(in_features=d_in, out_features=d_out, bias=qkv_bias)
        self.W_key = nn.Linear(in_features=d_in, out_features=d_out, bias=qkv_bias)
        self.W_value = nn.Linear(in_features=d_in, out_features=d_out, bias=qkv_bias)

    def forward(self, x):
        query_vectors = self.W_query(x)
        key_vectors = self.W_key(x)
        value_vectors = self.W_value(x)
        key_size = key_vectors.shape[1]
        raw_scores = torch.matmul(query_vectors, torch.transpose(key_vectors, 0, 1))
        weights = torch.softmax(raw_scores / math.sqrt(key_size), dim=1)
        output = torch.matmul(weights, value_vectors)
        return output


def transfer_weights(sa_v2, sa_v1):
    query_weight = sa_v2.W_query.weight
    key_weight = sa_v2.W_key.weight
    value_weight = sa_v2.W_value.weight
    sa_v1.W_query = nn.Parameter(torch.transpose(query_weight.detach(), 0, 1).clone())
    sa_v1.W_key = nn.Parameter(torch.transpose(key_weight.detach(), 0, 1).clone())
    sa_v1.W_value = nn.Parameter(torch.transpose(value_weight.detach(), 0, 1).clone())


def dot_product_variance(dim, num_trials, generator):
    queries = torch.randn(num_trials, dim, generator=generator)
    keys = torch.randn(num_trials, dim, generator=generator)
    products = []
    for trial in range(num_trials):
        products.append(torch.dot(queries[trial], keys[trial]))
    products = torch.stack(products)
    mean_before = products.mean()
    variance_before = ((products - mean_before) ** 2).mean()
    scaled = products / math.sqrt(dim)
    mean_after = scaled.mean()
    variance_after = ((scaled - mean_after) ** 2).mean()
    return variance_before.item(), variance_after.item()
