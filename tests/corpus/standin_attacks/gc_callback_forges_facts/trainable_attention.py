"""Self-attention with trainable weights, also called scaled dot-product attention (book section 3.4)."""
import torch
import torch.nn as nn


def init_qkv(d_in, d_out):
    """Create the three trainable projection matrices.

    Returns (W_query, W_key, W_value), each ``nn.Parameter(torch.rand(d_in, d_out))``, drawn in that
    order (the caller sets the seed, so the order decides the values).
    Hint: three calls to ``torch.rand``; wrap each in ``nn.Parameter``.
    """
    W_query = nn.Parameter(torch.rand(d_in, d_out))
    W_key = nn.Parameter(torch.rand(d_in, d_out))
    W_value = nn.Parameter(torch.rand(d_in, d_out))
    return W_query, W_key, W_value


def project(x, W):
    """Project embeddings into query, key or value space.

    Shapes: x [..., d_in], W [d_in, d_out] -> [..., d_out].
    Hint: a matrix product, with x on the left.
    """
    return x @ W


def attention_scores_for_query(query, keys):
    """Unnormalized attention scores (omega) of one query against all keys.

    Shapes: query [d_out], keys [T, d_out] -> scores [T].
    Hint: ``query @ keys.T``.
    """
    return query @ keys.T


def scaled_attention_weights(attn_scores, d_k):
    """Scaled softmax: softmax(attn_scores / sqrt(d_k)) over the last dim.

    Shapes: attn_scores [..., T] -> weights [..., T], each row summing to 1.
    Hint: divide by ``d_k ** 0.5`` before the softmax, not after; use ``dim=-1``.
    """
    return torch.softmax(attn_scores / d_k**0.5, dim=-1)


def context_vector(attn_weights, values):
    """Context vector: the attention-weighted sum of the value vectors.

    Shapes: attn_weights [T], values [T, d_out] -> context [d_out].
    Hint: ``attn_weights @ values``.
    """
    return attn_weights @ values


class SelfAttention_v1(nn.Module):
    """Self-attention with ``nn.Parameter`` weight matrices.

    __init__(d_in, d_out): parameters W_query, W_key, W_value, created in that order, each
    ``nn.Parameter(torch.rand(d_in, d_out))``.
    forward(x [T, d_in]) -> context vectors [T, d_out]: project x to queries, keys and values, scores
    queries @ keys.T, softmax over the last dim after dividing by sqrt(d_k), then weights @ values.
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


class SelfAttention_v2(nn.Module):
    """Self-attention with ``nn.Linear`` projections.

    __init__(d_in, d_out, qkv_bias=False): layers W_query, W_key, W_value, in that order, each
    ``nn.Linear(d_in, d_out, bias=qkv_bias)``.
    forward(x [T, d_in]) -> [T, d_out], the same computation as SelfAttention_v1.
    Hint: call the layers (``self.W_key(x)``) instead of multiplying by a matrix.
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


def transfer_weights(sa_v2, sa_v1):
    """Copy the weights of a SelfAttention_v2 into a SelfAttention_v1 (the book's exercise 3.1).

    After the call both modules give the same outputs. Returns None; modifies sa_v1 in place.
    Hint: ``nn.Linear`` stores its weight as [d_out, d_in], the transpose of v1's [d_in, d_out];
    copy under ``torch.no_grad()``.
    """
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)


def dot_product_variance(dim, num_trials, generator):
    """Why scale by sqrt(d_k): the variance of q.k grows with dim; dividing by sqrt(dim) keeps it near 1.

    Draw ``q = torch.randn(num_trials, dim, generator=generator)``, then ``k`` the same way; return
    (var_before, var_after) as Python floats: the population variance (ddof 0) of the num_trials dot
    products, before and after dividing them by sqrt(dim).
    Hint: ``(q * k).sum(dim=-1)`` gives all dot products; ``.var(unbiased=False)`` is ddof 0.
    """
    q = torch.randn(num_trials, dim, generator=generator)
    k = torch.randn(num_trials, dim, generator=generator)
    dots = (q * k).sum(dim=-1)
    var_before = dots.var(unbiased=False).item()
    var_after = (dots / dim**0.5).var(unbiased=False).item()
    return var_before, var_after
