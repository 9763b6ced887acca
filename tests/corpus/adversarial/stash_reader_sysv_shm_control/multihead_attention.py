"""Multi-head attention: stacked heads, then the efficient split-heads version (book section 3.6)."""
import torch
import torch.nn as nn

from .causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    """Several CausalAttention heads side by side.

    __init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False): ``heads``, an
    ``nn.ModuleList`` of num_heads ``CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)``.
    forward(x [b, T, d_in]) -> [b, T, num_heads * d_out]: the heads' outputs concatenated on the last dim.
    Hint: ``torch.cat([...], dim=-1)``.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("multihead_attention.MultiHeadAttentionWrapper: not attempted yet")

    def forward(self, x):
        raise NotImplementedError("multihead_attention.MultiHeadAttentionWrapper: not attempted yet")


class MultiHeadAttention(nn.Module):
    """Efficient multi-head attention: one set of projections, split into heads.

    __init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False): refuse d_out not divisible
    by num_heads, with ``raise ValueError(...)`` or the book's ``assert`` (both are accepted); then create, in this order, ``nn.Linear`` layers W_query,
    W_key, W_value (d_in -> d_out, bias=qkv_bias) and out_proj (d_out -> d_out, with bias), an
    ``nn.Dropout`` named ``dropout`` and the causal ``mask`` buffer [context_length, context_length].
    forward(x [b, T, d_in]) -> [b, T, d_out].
    Hint: view the projections as [b, T, num_heads, head_dim] and transpose to
    [b, num_heads, T, head_dim]; scale by sqrt(head_dim); merge the heads back before out_proj.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        raise NotImplementedError("multihead_attention.MultiHeadAttention: not attempted yet")

    def forward(self, x):
        raise NotImplementedError("multihead_attention.MultiHeadAttention: not attempted yet")


def gpt2_small_attention():
    """The attention module of GPT-2 small (the book's exercise 3.3).

    Returns a MultiHeadAttention with 12 heads, d_in = d_out = 768, context length 1024, dropout 0.0
    and no qkv bias: 2,360,064 parameters.
    """
    raise NotImplementedError("multihead_attention.gpt2_small_attention: not attempted yet")
