import torch
import torch.nn.functional as F


# part attention_scores
def attention_scores( inputs, query ):
    return ( inputs * query ).sum( dim=-1 )


# part normalize_sum
def normalize_sum( att ):
    return torch.div(att, torch.sum( att ))


# part softmax_naive
def softmax_naive( x ):
    numerator = torch.exp( x )
    denominator = torch.sum( numerator, dim=0, keepdim=True )
    return numerator / denominator


# part context_vector
def context_vector( inputs, attn_weights ):
    return torch.tensordot( attn_weights, inputs, dims=1 )


# part all_attention_scores
def all_attention_scores( inputs ):
    return torch.matmul(inputs, inputs.transpose( 0, 1 ))


# part all_attention_weights
def all_attention_weights( attn_scores ):
    return F.softmax( attn_scores, dim=1 )


# part all_context_vectors
def all_context_vectors( inputs, attn_weights ):
    return torch.matmul( attn_weights, inputs )
