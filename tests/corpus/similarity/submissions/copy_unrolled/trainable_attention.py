import torch
import torch.nn as nn
import torch.nn.functional as F


def _param( *shape ):
    return nn.Parameter(torch.rand( *shape ))


def init_qkv( d_in, d_out ):
    wq = _param( d_in, d_out )
    wk = _param( d_in, d_out )
    wv = _param( d_in, d_out )
    return wq, wk, wv


def project( x, W ):
    return torch.matmul( x, W )


def attention_scores_for_query( query, keys ):
    return torch.mv( keys, query )


def scaled_attention_weights( attn_scores, d_k ):
    return F.softmax(attn_scores * ( 1.0 / d_k ** 0.5 ), dim=-1)


def context_vector( attn_weights, values ):
    return torch.einsum("t,td->d", attn_weights, values)


def _attend( query, key, value ):
    attn = F.softmax(torch.matmul(query, key.transpose( -2, -1 )) / key.size( -1 ) ** 0.5, dim=-1)
    return torch.matmul( attn, value )


class SelfAttention_v1( nn.Module ):
    def __init__( self, d_in, d_out ):
        super().__init__()

        self.W_query, self.W_key, self.W_value = init_qkv( d_in, d_out )


    def forward( self, x ):
        return _attend(project( x, self.W_query ), project( x, self.W_key ), project( x, self.W_value ))



class SelfAttention_v2( nn.Module ):
    def __init__( self, d_in, d_out, qkv_bias=False ):
        super().__init__()

        make = lambda: nn.Linear( d_in, d_out, bias=qkv_bias )  # noqa: E731
        self.W_query = make()

        self.W_key = make()

        self.W_value = make()


    def forward( self, x ):
        return _attend(self.W_query( x ), self.W_key( x ), self.W_value( x ))



def transfer_weights( sa_v2, sa_v1 ):
    sa_v1.W_query.data = sa_v2.W_query.weight.detach().t().clone()
    sa_v1.W_key.data = sa_v2.W_key.weight.detach().t().clone()
    sa_v1.W_value.data = sa_v2.W_value.weight.detach().t().clone()


def dot_product_variance( dim, num_trials, generator ):
    query = torch.randn( num_trials, dim, generator=generator )
    key = torch.randn( num_trials, dim, generator=generator )
    width = torch.einsum("nd,nd->n", query, key)
    return float(torch.var( width, correction=0 )), float(torch.var(width / torch.tensor(float( dim )).sqrt(), correction=0))
