import torch
import torch.nn as nn
import torch.nn.functional as F


def simple_causal_mask(context_length):
    return torch.ones(context_length, context_length).tril_()


def mask_and_renormalize(attn_weights):
    masked = torch.tril(attn_weights)  # tril works on the last two dims of a batch
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(attn_scores, d_k):
    T = attn_scores.size(-1)
    allowed = torch.ones(T, T, dtype=torch.bool, device=attn_scores.device).tril()
    return F.softmax(attn_scores.masked_fill(~allowed, float("-inf")) * d_k**-0.5, dim=-1)


def apply_dropout(attn_weights, p):
    # What nn.Dropout does on the CPU: keep with probability 1 - p, scale the kept by 1 / (1 - p).
    if p == 0:
        return attn_weights
    if p == 1:
        return attn_weights * torch.zeros((), dtype=attn_weights.dtype, device=attn_weights.device)
    keep = torch.empty_like(attn_weights).bernoulli_(1 - p)
    return attn_weights * keep.div_(1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(p=dropout)
        # Convention: True where attending is allowed (on and below the diagonal).
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)))

    def forward(self, x):
        n = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.bmm(q, k.permute(0, 2, 1))
        scores = scores.masked_fill(~self.mask[:n, :n], float("-inf"))
        weights = F.softmax(scores * k.size(-1) ** -0.5, dim=-1)
        return torch.bmm(self.dropout(weights), v)
