import torch
import torch.nn as nn
import torch.nn.functional as F


# part init_qkv
def init_qkv( d_in, d_out ):
    W_query, W_key, W_value = [nn.Parameter(torch.rand( d_in, d_out )) for _ in range( 3 )]
    return W_query, W_key, W_value


# part project
def project( x, W ):
    return F.linear( x, W.T )


# part attention_scores_for_query
def attention_scores_for_query( query, keys ):
    return torch.mv( keys, query )


# part scaled_attention_weights
def scaled_attention_weights( attn_scores, d_k ):
    return F.softmax(attn_scores * d_k**-0.5, dim=attn_scores.dim() - 1)


# part context_vector
def context_vector( attn_weights, values ):
    return torch.mv( values.T, attn_weights )


# part SelfAttention_v1
class SelfAttention_v1( nn.Module ):
    # part __init__
    def __init__( self, d_in, d_out ):
        super().__init__()

        for name in ("W_query", "W_key", "W_value"):
            setattr(self, name, nn.Parameter(torch.rand( d_in, d_out )))


    # part forward
    def forward( self, x ):
        queries = torch.mm( x, self.W_query )

        keys = torch.mm( x, self.W_key )

        values = torch.mm( x, self.W_value )

        probs = F.softmax(torch.mm( queries, keys.T ) * keys.size( 1 ) ** -0.5, dim=1)

        return torch.mm( probs, values )



# part SelfAttention_v2
class SelfAttention_v2( nn.Module ):
    # part __init__
    def __init__( self, d_in, d_out, qkv_bias=False ):
        super().__init__()

        self.W_query = nn.Linear( d_in, d_out, bias=qkv_bias )

        self.W_key = nn.Linear( d_in, d_out, bias=qkv_bias )

        self.W_value = nn.Linear( d_in, d_out, bias=qkv_bias )


    # part forward
    def forward( self, x ):
        qq = F.linear( x, self.W_query.weight, self.W_query.bias )

        kk = F.linear( x, self.W_key.weight, self.W_key.bias )

        vv = F.linear( x, self.W_value.weight, self.W_value.bias )

        probs = F.softmax(torch.mm( qq, kk.T ) * kk.size( 1 ) ** -0.5, dim=1)

        return torch.mm( probs, vv )



# part transfer_weights
def transfer_weights( sa_v2, sa_v1 ):
    sa_v1.load_state_dict(
        {
            "W_query": sa_v2.W_query.weight.T,
            "W_key": sa_v2.W_key.weight.T,
            "W_value": sa_v2.W_value.weight.T,
        }
    )


# part dot_product_variance
def dot_product_variance( dim, num_trials, generator ):
    qq = torch.randn( num_trials, dim, generator=generator )
    kk = torch.randn( num_trials, dim, generator=generator )
    dots = torch.bmm(qq.unsqueeze( 1 ), kk.unsqueeze( 2 )).flatten()
    var_before = dots.var( unbiased=False )
    var_after = var_before / dim
    return var_before.item(), var_after.item()
