import torch
import torch.nn as nn
import torch.nn.functional as F


# part simple_causal_mask
def simple_causal_mask( context_length ):
    return torch.ones( context_length, context_length ).tril_()


# part mask_and_renormalize
def mask_and_renormalize( attn_weights ):
    hidden = torch.tril( attn_weights )
    return hidden / hidden.sum( dim=-1, keepdim=True )


# part causal_attention_weights
def causal_attention_weights( attn_scores, d_k ):
    T = attn_scores.size( -1 )
    allowed = torch.ones( T, T, dtype=torch.bool, device=attn_scores.device ).tril()
    return F.softmax(attn_scores.masked_fill(~allowed, float("-inf")) * d_k**-0.5, dim=-1)


# part apply_dropout
def apply_dropout( attn_weights, p ):
    if p == 0:
        return attn_weights
    if p == 1:
        return attn_weights * torch.zeros((), dtype=attn_weights.dtype, device=attn_weights.device)

    keep = torch.empty_like( attn_weights ).bernoulli_( 1 - p )
    return attn_weights * keep.div_( 1 - p )


# part CausalAttention
class CausalAttention( nn.Module ):
    # part __init__
    def __init__( self, d_in, d_out, context_length, dropout, qkv_bias=False ):
        super().__init__()

        self.W_query = nn.Linear( d_in, d_out, bias=qkv_bias )

        self.W_key = nn.Linear( d_in, d_out, bias=qkv_bias )

        self.W_value = nn.Linear( d_in, d_out, bias=qkv_bias )

        self.dropout = nn.Dropout( p=dropout )

        self.register_buffer("mask", torch.tril(torch.ones( context_length, context_length, dtype=torch.bool )))


    # part forward
    def forward( self, x ):
        ntok = x.size( 1 )

        qq, kk, vv = self.W_query( x ), self.W_key( x ), self.W_value( x )

        att = torch.bmm(qq, kk.permute( 0, 2, 1 ))

        att = att.masked_fill(~self.mask[:ntok, :ntok], float("-inf"))

        probs = F.softmax(att * kk.size( -1 ) ** -0.5, dim=-1)

        return torch.bmm(self.dropout( probs ), vv)

