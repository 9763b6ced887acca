import torch
import torch.nn as nn
import torch.nn.functional as F

from .causal_attention import CausalAttention


class MultiHeadAttentionWrapper( nn.Module ):
    def __init__( self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False ):
        super().__init__()

        self.heads = nn.ModuleList(CausalAttention( d_in, d_out, context_length, dropout, qkv_bias )

                                   for _ in range( num_heads ))


    def forward( self, x ):
        results = []
        for h in self.heads:
            results.append(h( x ))

        return torch.cat(results, dim=results[0].dim() - 1)



def _split( tensor, nh ):
    b, T, width = tensor.shape
    return tensor.unflatten(-1, ( nh, width // nh )).transpose( 1, 2 )


def _merge( tensor ):
    b, h, T, hd = tensor.shape
    return tensor.transpose( 1, 2 ).flatten( 2 )


class MultiHeadAttention( nn.Module ):
    def __init__( self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False ):
        super().__init__()

        if d_out % num_heads:
            raise ValueError("num_heads must divide d_out")

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear( d_in, d_out, qkv_bias )

        self.W_key = nn.Linear( d_in, d_out, qkv_bias )

        self.W_value = nn.Linear( d_in, d_out, qkv_bias )

        self.out_proj = nn.Linear( d_out, d_out )

        self.dropout = nn.Dropout( dropout )

        self.register_buffer("mask", torch.ones( context_length, context_length ).tril())


    def forward( self, x ):
        T = x.size( 1 )

        query = _split(self.W_query( x ), self.num_heads)

        key = _split(self.W_key( x ), self.num_heads)

        value = _split(self.W_value( x ), self.num_heads)

        raw = torch.matmul(query, key.transpose( -2, -1 )) / self.head_dim ** 0.5
        raw = torch.where(self.mask[:T, :T].bool(), raw, torch.full_like(raw, float("-inf")))

        attn = self.dropout(F.softmax( raw, dim=-1 ))

        return self.out_proj(_merge(torch.matmul( attn, value )))



def gpt2_small_attention():
    return MultiHeadAttention( d_in=768, d_out=768, context_length=1024, dropout=0.0, num_heads=12 )
