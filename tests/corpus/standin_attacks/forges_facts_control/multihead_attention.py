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
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    """Efficient multi-head attention: one set of projections, split into heads.

    __init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False): raise ``ValueError``
    when d_out is not divisible by num_heads; then create, in this order, ``nn.Linear`` layers W_query,
    W_key, W_value (d_in -> d_out, bias=qkv_bias) and out_proj (d_out -> d_out, with bias), an
    ``nn.Dropout`` named ``dropout`` and the causal ``mask`` buffer [context_length, context_length].
    forward(x [b, T, d_in]) -> [b, T, d_out].
    Hint: view the projections as [b, T, num_heads, head_dim] and transpose to
    [b, num_heads, T, head_dim]; scale by sqrt(head_dim); merge the heads back before out_proj.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


def gpt2_small_attention():
    """The attention module of GPT-2 small (the book's exercise 3.3).

    Returns a MultiHeadAttention with 12 heads, d_in = d_out = 768, context length 1024, dropout 0.0
    and no qkv bias: 2,360,064 parameters.
    """
    return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12, qkv_bias=False)
