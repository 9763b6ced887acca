import torch as t

attention_scores = lambda inputs, query: inputs.matmul(query)


def normalize_sum(scores): return scores / scores.sum(dim=-1)
def softmax_naive(x): return x.exp() / x.exp().sum(0)
def context_vector(inputs, attn_weights): return inputs.mT.matmul(attn_weights)
def all_attention_scores(inputs): return inputs.matmul(inputs.mT)
def all_attention_weights(attn_scores): return t.nn.functional.softmax(attn_scores, -1)
def all_context_vectors(inputs, attn_weights): return attn_weights.matmul(inputs)
