"""Hidden suite: causal attention and dropout."""
import torch

from autograder.unit import documents
from autograder.grading.suites.authoring import rand, randn, step

from autograder.unit.mistakes import (DROPOUT_IN_EVAL, causal_weight_mistakes, dropout_place_mistakes, linear_mistakes,
                                      seed_in_forward_mistakes)

F64 = torch.float64


def document_scores():
    """(name, attention scores [T, T]) with each document's trainable weights."""
    for name, (factory, seed, _where) in documents.INPUTS.items():
        x = factory()
        torch.default_generator.manual_seed(seed)  # torch.manual_seed, minus its CUDA bookkeeping
        Wq, Wk, _ = (torch.rand(x.shape[1], documents.D_OUT) for _ in range(3))
        yield name, (x @ Wq) @ (x @ Wk).T


def book_batch():
    x = documents.book_inputs()
    return torch.stack((x, x), dim=0)


@step("causal_attention.simple_causal_mask")
class TestSimpleCausalMask:
    mistakes = {"upper triangle instead of lower (torch.triu instead of torch.tril)": lambda T: torch.triu(torch.ones(T, T))}

    def test_values(self, check):
        for T in (6, 5):
            check.call(T, case=f"context_length={T}", public=True, mistakes=self.mistakes)

    def test_randomized(self, check):
        for T in (1, 2, 11):
            check.call(T, case=f"context_length={T}", mistakes=self.mistakes)


@step("causal_attention.mask_and_renormalize")
class TestMaskAndRenormalize:
    mistakes = {"masked without renormalizing the rows": lambda w: w * torch.tril(torch.ones(w.shape[-2:], dtype=w.dtype)),
                "kept the upper triangle instead of the lower": lambda w: (lambda m: m / m.sum(-1, keepdim=True))(
                    w * torch.triu(torch.ones(w.shape[-2:], dtype=w.dtype)))}

    def _cases(self, check, grad):
        for name, scores in document_scores():
            check.call(torch.softmax(scores / 2**0.5, dim=-1), case=f"{name}: attention weights", public=True,
                       grad=grad, arg_names=["attn_weights"], mistakes=self.mistakes)

    def test_values(self, check):
        self._cases(check, False)
        # a batch of two: the rows are along the last dim whatever comes before (a sum over dim=1 is not)
        _name, book = next(document_scores())
        w = torch.softmax(torch.stack((book, book.flip(-1))) / 2**0.5, dim=-1)
        check.call(w, case="book: a batch of two [2, 6, 6] (the second with its columns reversed)", public=True,
                   arg_names=["attn_weights"], mistakes=self.mistakes)
        # float64 is legal: the answer is float64 too (rows filled into torch.zeros(attn_weights.shape) are float32)
        check.call(torch.softmax(book.to(F64) / 2**0.5, dim=-1), case="book (float64): attention weights", public=True,
                   arg_names=["attn_weights"], mistakes=self.mistakes)

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for shape, seed in [((2, 5, 5), 101), ((1, 1), 102), ((3, 2, 4, 4), 103)]:
            w = torch.softmax(randn(*shape, seed=seed, dtype=F64), dim=-1)
            check.call(w, case=f"weights {list(shape)}", grad=True, arg_names=["attn_weights"], mistakes=self.mistakes)


@step("causal_attention.causal_attention_weights")
class TestCausalAttentionWeights:
    mistakes = causal_weight_mistakes()

    def _cases(self, check, grad):
        for name, scores in document_scores():
            check.call(scores, 2, case=f"{name}: scores, d_k=2", public=True, grad=grad,
                       arg_names=["attn_scores", "d_k"], mistakes=self.mistakes)
        if not grad:
            check.call(torch.tensor([[500.0, 1.0, 2.0], [450.0, 460.0, 3.0], [-4.0, -4.0, -4.0]]), 4, public=True,
                       case="large scores (up to 500) and ties, d_k=4", arg_names=["attn_scores", "d_k"])
            _name, book = next(document_scores())
            # float64 is legal: the answer is float64 too (a loop filling torch.zeros returns float32)
            check.call(book.to(F64), 2, case="book (float64): scores, d_k=2", public=True,
                       arg_names=["attn_scores", "d_k"], mistakes=self.mistakes)
            # a batch of two: the softmax runs over the last dim whatever comes before (dim=1 is not that)
            check.call(torch.stack((book, book.flip(-1))), 2, case="book: a batch of two [2, 6, 6], d_k=2",
                       public=True, arg_names=["attn_scores", "d_k"], mistakes=self.mistakes)

    def test_values(self, check):
        self._cases(check, False)

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for shape, d_k, seed in [((2, 6, 6), 16, 111), ((1, 1), 4, 112), ((3, 7, 7), 3, 113)]:
            check.call(randn(*shape, seed=seed, dtype=F64) * 3, d_k, case=f"scores {list(shape)}, d_k={d_k}",
                       grad=True, arg_names=["attn_scores", "d_k"], mistakes=self.mistakes)
        check.call(randn(2, 4, 4, seed=114) * 800, 4, case="large scores [2, 4, 4] (hundreds), d_k=4", grad=True,
                   arg_names=["attn_scores", "d_k"])


@step("causal_attention.apply_dropout")
class TestApplyDropout:
    def test_properties(self, check):
        # Large enough that the keep rate is a tight statistic; machine-independent, so public.
        for p, seed in [(0.5, 123), (0.1, 7), (0.8, 8)]:
            check.dropout(torch.ones(100, 100), p, seed=seed, case=f"ones(100, 100), p={p}", public=True)
        weights = torch.softmax(rand(6, 6, seed=5), dim=-1)
        check.dropout(weights, 0.5, seed=123, case="attention weights, p=0.5, stays differentiable", public=True,
                      needs_graph=True)
        check.dropout(torch.ones(6, 6), 0.0, seed=1, case="p=0.0 keeps everything", public=True)

    def test_seeded(self, check):
        # The book's example: torch.manual_seed(123); nn.Dropout(0.5)(torch.ones(6, 6)). The mask
        # depends on the CPU, so this runs only where student and reference share the machine.
        check.call(torch.ones(6, 6), 0.5, seed=123, case="the book's torch.ones(6, 6), p=0.5, seed 123",
                   arg_names=["attn_weights", "p"])
        check.call(torch.softmax(rand(2, 5, 5, seed=9), -1), 0.3, seed=99, case="batched weights, p=0.3",
                   grad=True, arg_names=["attn_weights", "p"])


def causal_module_init(d_in=3, d_out=2, context_length=6, dropout=0.0):
    return [d_in, d_out, context_length, dropout]


class _CausalModule:
    """Counts shared by CausalAttention and the two multi-head modules."""

    extra_init: list = []  # e.g. num_heads
    d_out = 2
    prefix = ""

    def init(self, d_in=3, d_out=None, context_length=6, dropout=0.0, extra=None):
        return [d_in, d_out or self.d_out, context_length, dropout, *(extra if extra is not None else self.extra_init)]

    def mistakes(self, context_length: int | None = None):
        return linear_mistakes(causal=True, prefix=self.prefix, context_length=context_length)

    def test_parameters(self, check):
        check.parameters(self.init(), seed=123, case="book sizes after torch.manual_seed(123)", public=True)

    def _forward(self, check, grad):
        check.module(self.init(), book_batch(), seed=123, grad=grad, public=True,
                     case="book batch (2, 6, 3), dropout 0.0", mistakes=self.mistakes())
        x = documents.wars_inputs().unsqueeze(0)
        check.module(self.init(), x, seed=123, grad=grad, public=True,
                     case="'wars' input (1, 5, 3): shorter than context_length 6", mistakes=self.mistakes(6))

    def _second_calls(self, check, grad):
        # The same instance called twice, as a model calls it: a longer T after a shorter one, then a shorter T
        # after a training-mode call. State kept between calls (cached keys, a mask buffer overwritten by its
        # [:T, :T] slice) is right on the first call only.
        book, wars = book_batch(), documents.wars_inputs().unsqueeze(0)
        check.module(self.init(), book, seed=123, grad=grad, public=True, before=[(wars, False)],
                     case="second call on the same module: 'wars' (1, 5, 3) first, then the book batch (2, 6, 3)",
                     mistakes=self.mistakes())
        check.module(self.init(), wars, seed=123, grad=grad, public=True, before=[(book, True)],
                     case="second call on the same module: the book batch in training mode (dropout 0.0) first, "
                          "then 'wars' (1, 5, 3) in eval mode", mistakes=self.mistakes(6))

    def test_forward(self, check):
        self._forward(check, False)
        self._second_calls(check, False)
        # one token (T = 1): a [T, T] of one entry, a dim of size 1 a squeeze() would collapse
        check.module(self.init(), book_batch()[:, :1], seed=123, public=True,
                     case="one token (T = 1): the book batch's first token (2, 1, 3)")
        # Dropout's public signal that needs no seeded mask: in eval mode, dropout 0.5 changes nothing.
        # (another seed than the hidden eval-mode cases: their answers stay hidden, even from a student whose dropout
        # ignores eval())
        check.module(self.init(dropout=0.5), book_batch(), seed=321, train=False, forward_seed=324, public=True,
                     case="dropout 0.5 in eval mode (model.eval()): dropout is off, the output is dropout 0.0's",
                     mistakes=DROPOUT_IN_EVAL)
        # and in training mode, by its properties: with one token, each head's one attention weight is 1, dropped
        # (that head's output all zeros) or kept and rescaled (the eval-mode output / (1 - p)), whatever the mask
        check.module_dropout(self.init(dropout=0.5), rand(64, 1, 3, seed=322), 0.5, heads=self.heads(), seed=321,
                             forward_seed=323, params=self.identity_projection(), public=True,
                             case="dropout 0.5 in training mode, 64 one-token inputs (64, 1, 3): each head's output "
                                  "is all zeros or the eval-mode output / (1 - 0.5)")
        self.more_forward_cases(check)

    def heads(self) -> int:
        """How many heads the module's output puts side by side (init's num_heads)."""
        return self.init()[4] if len(self.init()) > 4 else 1

    def identity_projection(self) -> dict:
        """Parameters replaced in the training-mode dropout case: none, unless the heads are projected together."""
        return {}

    def more_forward_cases(self, check):
        """A subclass's own public forward cases (a test method of its own would run after the base's counts)."""

    def test_gradients(self, check):
        self._forward(check, True)
        self._second_calls(check, True)

    def test_dropout(self, check):
        # Training mode, dropout 0.5, the same seed before the student's and the reference's forward:
        # dropout in the wrong place (or applied twice, or not at all) changes the output.
        check.module(self.init(dropout=0.5), book_batch(), seed=123, train=True, forward_seed=2024, grad=True,
                     case="training mode, dropout 0.5", mistakes=self.dropout_mistakes(0.5, 2024))
        # dropout that ignores eval() gives the reference's own training-mode answer: same seed, same mask
        check.module(self.init(dropout=0.5), book_batch(), seed=123, train=False, case="eval mode: dropout is off",
                     mistakes=DROPOUT_IN_EVAL)
        # training, then eval on the same instance: dropout must follow the mode of each call
        check.module(self.init(dropout=0.5), documents.wars_inputs().unsqueeze(0), seed=123, train=False,
                     before=[(book_batch(), True, 2024)], case="training mode first, then eval mode: dropout is off",
                     mistakes=DROPOUT_IN_EVAL)

    def dropout_mistakes(self, p: float, forward_seed: int) -> dict:
        """Dropout in the wrong place, or a seed of the module's own, as a training-mode call seeded with
        ``forward_seed`` gives them."""
        return {**dropout_place_mistakes(p, forward_seed, self.prefix), **seed_in_forward_mistakes()}

    def random_sizes(self):
        # (d_in, d_out, context_length, T, batch, seed): square d_in == d_out, T < context_length, batch 1 and 3
        return [(4, 4, 8, 5, 1, 131), (5, 3, 6, 6, 3, 132), (8, 8, 12, 3, 2, 133)]

    def test_randomized(self, check):
        for d_in, d_out, ctx, T, b, seed in self.random_sizes():
            init = self.init(d_in=d_in, d_out=d_out, context_length=ctx)
            x = rand(b, T, d_in, seed=seed)
            check.parameters(init, seed=seed, case=f"d_in={d_in}, d_out={d_out}, context_length={ctx}")
            check.module(init, x, seed=seed, grad=True, case=f"d_in={d_in}, d_out={d_out}, T={T} of {ctx}, batch {b}",
                         mistakes=self.mistakes(ctx))
        # Three calls on one instance: T, a longer T (the full context), a shorter T; training mode, then eval.
        d_in, ctx = 4, 8
        calls = [(rand(2, 5, d_in, seed=134), True, 1), (rand(1, ctx, d_in, seed=135), False)]
        check.module(self.init(d_in=d_in, d_out=self.d_out * 2, context_length=ctx), rand(3, 2, d_in, seed=136),
                     seed=134, grad=True, before=calls, case="third call: T=5 (training), T=8, then T=2, batch 3",
                     mistakes=self.mistakes(ctx))
        init = self.init(d_in=4, d_out=self.d_out * 2, context_length=5)
        check.module(init, rand(2, 5, 4, seed=140), seed=140, init_kwargs={"qkv_bias": True}, grad=True,
                     case="qkv_bias=True")


@step("causal_attention.CausalAttention")
class TestCausalAttention(_CausalModule):
    pass
