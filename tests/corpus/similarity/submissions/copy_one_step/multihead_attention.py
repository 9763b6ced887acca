"""Multi-head attention: stacked heads, then the efficient split-heads version (book section 3.6)."""
import math
import torch
import torch.nn as nn

from .causal_attention import CausalAttention


# my MultiHeadAttentionWrapper
class MultiHeadAttentionWrapper(nn.Module):
    """Several CausalAttention heads side by side.

    __init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False): ``heads``, an
    ``nn.ModuleList`` of num_heads ``CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)``.
    forward(x [b, T, d_in]) -> [b, T, num_heads * d_out]: the heads' outputs concatenated on the last dim.
    Hint: ``torch.cat([...], dim=-1)``.
    """

    # my __init__
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    # my forward
    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# my MultiHeadAttention
class MultiHeadAttention(nn.Module):
    # my __init__
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        idx = torch.arange(context_length)
        self.register_buffer("mask", (idx[None, :] > idx[:, None]).float())

    # my _heads
    def _heads(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    # my forward
    def forward(self, x):
        B, T, _ = x.shape
        qs = self._heads(self.W_query(x))
        ks = self._heads(self.W_key(x))
        vs = self._heads(self.W_value(x))
        S = qs.matmul(ks.transpose(-2, -1)) / math.sqrt(self.head_dim)
        S = S.masked_fill(self.mask[:T, :T] != 0, -math.inf)
        P = self.dropout(torch.softmax(S, dim=-1))
        out = P.matmul(vs).transpose(1, 2).contiguous().view(B, T, self.d_out)
        return self.out_proj(out)


# my gpt2_small_attention
def gpt2_small_attention():
    """The attention module of GPT-2 small (the book's exercise 3.3).

    Returns a MultiHeadAttention with 12 heads, d_in = d_out = 768, context length 1024, dropout 0.0
    and no qkv bias: 2,360,064 parameters.
    """
    return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12, qkv_bias=False)
