"""Hidden suite: multi-head attention."""
import torch

from autograder.grading.suites.authoring import rand, step

from autograder.feedback.catalogue import MISCONCEPTIONS
from autograder.unit.mistakes import seed_in_forward_mistakes

from .test_causal_attention import _CausalModule, book_batch


@step("multihead_attention.MultiHeadAttentionWrapper")
class TestMultiHeadAttentionWrapper(_CausalModule):
    extra_init = [2]  # num_heads, as in the book
    prefix = "heads.0."

    def mistakes(self, context_length=None):
        return {}  # a head's own mistakes are CausalAttention's; the wrapper is graded with a correct head

    def dropout_mistakes(self, p, forward_seed):
        return {}


@step("multihead_attention.MultiHeadAttention")
class TestMultiHeadAttention(_CausalModule):
    extra_init = [2]
    # divisible by num_heads=2; head_dim 4: every wrong scaling below gives other values than the others here (with
    # d_out 4, head_dim 2 is sqrt(d_out): dividing by head_dim and by sqrt(d_out) could not be told apart)
    d_out = 8

    def mistakes(self, context_length=None, heads=2):
        return {"out_proj is created but never applied": lambda p, x: _mha(p, x, heads=heads, out_proj=False),
                "heads not merged back in the right order (transpose before view missing)":
                    lambda p, x: _mha(p, x, heads=heads, merge="view"),
                "heads merged with permute in the wrong order (permute(2, 0, 1, 3): batch and tokens swapped, "
                "which shows only with a batch of more than one): use .transpose(1, 2) or permute(0, 2, 1, 3)":
                    lambda p, x: _mha(p, x, heads=heads, merge="permute"),
                "scores scaled by sqrt(number of tokens) instead of sqrt(head_dim)":
                    lambda p, x: _mha(p, x, heads=heads, scale="tokens"),
                "scores scaled by sqrt(d_out) instead of sqrt(head_dim)": lambda p, x: _mha(p, x, heads=heads, scale="d_out"),
                "scores scaled by sqrt(num_heads) instead of sqrt(head_dim)":
                    lambda p, x: _mha(p, x, heads=heads, scale="heads"),
                MISCONCEPTIONS["divided-by-head-dim"]: lambda p, x: _mha(p, x, heads=heads, scale="head_dim, no sqrt"),
                MISCONCEPTIONS["heads-split-interleaved"]: lambda p, x: _mha(p, x, heads=heads, layout="interleaved"),
                MISCONCEPTIONS["mask-hides-diagonal"]: lambda p, x: _mha(p, x, heads=heads, diagonal=0)}

    def dropout_mistakes(self, p, forward_seed):
        return seed_in_forward_mistakes()  # the reference's own answer, seeded otherwise

    def identity_projection(self):
        # out_proj mixes the heads: an identity one keeps each head's output in its own columns
        return {"out_proj.weight": torch.eye(self.d_out), "out_proj.bias": torch.zeros(self.d_out)}

    def more_forward_cases(self, check):
        # num_heads (2) differs from head_dim (3) here, unlike in the book's sizes: a scaling by sqrt(num_heads)
        # shows in grade check too
        check.module([3, 6, 6, 0.0, 2], book_batch(), seed=123, public=True,
                     case="book batch (2, 6, 3), d_out=6: 2 heads of 3", mistakes=self.mistakes())

    def test_errors(self, check):
        # The book refuses with ``assert``, the docstring asks for ValueError: the course teaches both.
        refusals = ("ValueError", "AssertionError")
        for init, case in (([3, 5, 6, 0.0, 2], "d_out=5 is not divisible by num_heads=2"),
                           ([8, 6, 4, 0.0, 4], "d_out=6 is not divisible by num_heads=4")):
            check.raises("ValueError", init, case=case, public=True, also_accepted=refusals[1:])
        # Valid sizes are accepted: beside the cases above (and hidden ones of both kinds), the count is which
        # arguments the code refuses, a pattern only code that tells them apart gives, never one fact a worker says.
        check.accepts(refusals, [3, 4, 6, 0.0, 2], case="d_out=4 is divisible by num_heads=2", public=True)
        check.raises("ValueError", [4, 10, 6, 0.0, 4], case="d_out=10, num_heads=4", also_accepted=refusals[1:])
        check.accepts(refusals, [4, 12, 6, 0.0, 4], case="d_out=12 is divisible by num_heads=4")
        check.raises("ValueError", [2, 7, 5, 0.0, 3], case="d_out=7, num_heads=3", also_accepted=refusals[1:])
        check.accepts(refusals, [2, 9, 5, 0.0, 3], case="d_out=9 is divisible by num_heads=3")

    def random_sizes(self):
        # (d_in, d_out, context_length, T, batch, seed): head_dim, its square root, sqrt(d_out), sqrt(num_heads) and
        # sqrt(T) all differ, so that each wrong scaling gives its own values
        return [(8, 8, 8, 5, 1, 151), (6, 6, 6, 5, 3, 152), (8, 8, 12, 3, 2, 153)]

    def test_randomized(self, check):
        super().test_randomized(check)
        x = rand(2, 7, 12, seed=160)
        check.module([12, 12, 8, 0.0, 4], x, seed=160, grad=True, case="12 dims, 4 heads of 3",
                     mistakes=self.mistakes(heads=4))


def _mha(p, x, heads, out_proj=True, merge="transpose", scale="head_dim", layout="contiguous", diagonal=1):
    b, T, _ = x.shape
    q = x @ p["W_query.weight"].T
    k = x @ p["W_key.weight"].T
    v = x @ p["W_value.weight"].T
    if "W_query.bias" in p:
        q, k, v = q + p["W_query.bias"], k + p["W_key.bias"], v + p["W_value.bias"]
    d_out = q.shape[-1]
    hd = d_out // heads

    def split(t):
        if layout == "interleaved":  # head h takes columns h, h + heads, h + 2 * heads, ...
            return t.view(b, T, hd, heads).permute(0, 3, 1, 2)
        return t.view(b, T, heads, hd).transpose(1, 2)

    q, k, v = split(q), split(k), split(v)
    scores = (q @ k.transpose(2, 3)).masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal), -torch.inf)
    divisor = {"head_dim": hd ** 0.5, "head_dim, no sqrt": hd, "tokens": T ** 0.5, "d_out": d_out ** 0.5,
               "heads": heads ** 0.5}[scale]
    w = torch.softmax(scores / divisor, dim=-1)
    ctx = w @ v
    ctx = {"transpose": ctx.transpose(1, 2), "view": ctx, "permute": ctx.permute(2, 0, 1, 3)}[merge]
    ctx = ctx.contiguous().view(b, T, d_out)
    if out_proj:
        ctx = ctx @ p["out_proj.weight"].T + p["out_proj.bias"]
    return ctx


@step("multihead_attention.gpt2_small_attention")
class TestGPT2SmallAttention:
    def test_parameters(self, check):
        check.parameters([], seed=123, shapes_only=True, expect_count=2_360_064, public=True,
                         case="12 heads, 768 dims, context 1024, no qkv bias: 2,360,064 parameters")

    def test_forward(self, check):
        # One construction serves both: the parameters drawn after torch.manual_seed(123), then the forward pass
        # with those same parameters, judged only once they match ours (building 2.4 M parameters is most of
        # this step's cost).
        check.module([], rand(1, 4, 768, seed=170), seed=123, with_parameters=True,
                     case="parameters drawn after torch.manual_seed(123), then forward on a (1, 4, 768) input")
        # The configuration, not only the shapes: a second call, longer, in training mode. With dropout 0.0
        # training mode changes nothing; dropout 0.1 (GPT-2's training value) shows here.
        check.module([], rand(1, 6, 768, seed=171), seed=123, with_parameters=True, train=True, forward_seed=2024,
                     before=[(rand(1, 4, 768, seed=170), False)],
                     case="second call, (1, 6, 768) in training mode: dropout 0.0 as the exercise says")
