import torch
import torch.nn as nn
import torch.nn.functional as F

from .causal_attention import CausalAttention

GPT2_SMALL = {"d_in": 768, "d_out": 768, "context_length": 1024, "dropout": 0.0, "num_heads": 12, "qkv_bias": False}


# part MultiHeadAttentionWrapper
class MultiHeadAttentionWrapper( nn.Module ):
    # part __init__
    def __init__( self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False ):
        super().__init__()

        self.heads = nn.ModuleList()

        for _ in range( num_heads ):
            self.heads.append(CausalAttention( d_in, d_out, context_length, dropout, qkv_bias=qkv_bias ))


    # part forward
    def forward( self, x ):
        return torch.concat(tuple(map(lambda head: head( x ), self.heads)), dim=-1)



# part MultiHeadAttention
class MultiHeadAttention( nn.Module ):
    # part __init__
    def __init__( self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False ):
        super().__init__()

        hd, rem = divmod( d_out, num_heads )

        if rem:
            raise ValueError("d_out must be a multiple of num_heads")

        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, hd
        self.W_query = nn.Linear( d_in, d_out, bias=qkv_bias )

        self.W_key = nn.Linear( d_in, d_out, bias=qkv_bias )

        self.W_value = nn.Linear( d_in, d_out, bias=qkv_bias )

        self.out_proj = nn.Linear( d_out, d_out, bias=True )

        self.dropout = nn.Dropout( p=dropout )

        self.register_buffer("mask", torch.tril(torch.ones( context_length, context_length, dtype=torch.bool )))


    # part forward
    def forward( self, x ):
        batch, ntok, _ = x.shape
        hshape = ( batch, ntok, self.num_heads, self.head_dim )

        qq = self.W_query( x ).reshape( hshape ).permute( 0, 2, 1, 3 )

        kk = self.W_key( x ).reshape( hshape ).permute( 0, 2, 1, 3 )

        vv = self.W_value( x ).reshape( hshape ).permute( 0, 2, 1, 3 )

        att = torch.matmul(qq, kk.permute( 0, 1, 3, 2 ))

        att = att.masked_fill(~self.mask[:ntok, :ntok], float("-inf"))

        probs = self.dropout(F.softmax( att * self.head_dim**-0.5, dim=-1 ))

        ctx = torch.matmul( probs, vv ).permute( 0, 2, 1, 3 ).reshape( batch, ntok, self.d_out )

        return self.out_proj( ctx )



# part gpt2_small_attention
def gpt2_small_attention():
    return MultiHeadAttention( **GPT2_SMALL )
