import torch
import torch.nn as nn
import torch.nn.functional as F


def _lower( T, like=None ):
    kw = {} if like is None else {"dtype": like.dtype, "device": like.device}
    return torch.ones( T, T, **kw ).tril()


def simple_causal_mask( context_length ):
    return _lower( context_length )


def mask_and_renormalize( attn_weights ):
    keep = attn_weights * _lower(attn_weights.size( -1 ), attn_weights)
    return F.normalize( keep, p=1, dim=-1 )


def causal_attention_weights( attn_scores, d_k ):
    T = attn_scores.size( -1 )
    ok = _lower( T, attn_scores ).bool()
    sc = torch.where(ok, attn_scores, torch.full_like(attn_scores, float("-inf")))
    return F.softmax( sc / d_k ** 0.5, dim=-1 )


def apply_dropout( attn_weights, p ):
    return nn.Dropout( p )( attn_weights )


class CausalAttention( nn.Module ):
    def __init__( self, d_in, d_out, context_length, dropout, qkv_bias=False ):
        super().__init__()

        self.d_out = d_out
        self.W_query = nn.Linear( d_in, d_out, qkv_bias )

        self.W_key = nn.Linear( d_in, d_out, qkv_bias )

        self.W_value = nn.Linear( d_in, d_out, qkv_bias )

        self.dropout = nn.Dropout( dropout )

        self.register_buffer("mask", _lower( context_length ))


    def forward( self, x ):
        T = x.size( 1 )

        query, key, value = self.W_query( x ), self.W_key( x ), self.W_value( x )

        raw = torch.matmul(query, key.transpose( -2, -1 ))

        raw = torch.where(self.mask[:T, :T].bool(), raw, torch.full_like(raw, float("-inf")))

        attn = self.dropout(F.softmax(raw / key.size( -1 ) ** 0.5, dim=-1))

        return torch.matmul( attn, value )

