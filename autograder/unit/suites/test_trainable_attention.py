"""Hidden suite: self-attention with trainable weights."""
import torch

from autograder.unit import documents
from autograder.grading.suites.authoring import rand, randn, step

from autograder.unit.mistakes import linear_mistakes, scaled_weight_mistakes, v1_mistakes

D_OUT = documents.D_OUT
F64 = torch.float64


def document_cases():
    """(name, inputs, seed, W_query, W_key, W_value) as each document draws them."""
    for name, (factory, seed, _where) in documents.INPUTS.items():
        x = factory()
        torch.default_generator.manual_seed(seed)  # torch.manual_seed, minus its CUDA bookkeeping
        ws = [torch.rand(x.shape[1], D_OUT) for _ in range(3)]
        yield name, x, seed, *ws


def book_float64():
    """The book's input and weights again in float64 (a float64 input is legal: the answer is float64 too; a loop
    filling ``torch.empty``/``torch.zeros`` returns float32, which the hidden float64 cases catch as well)."""
    name, x, _seed, Wq, Wk, Wv = next(document_cases())
    return x.to(F64), Wq.to(F64), Wk.to(F64), Wv.to(F64)


def module_random_cases():
    """(d_in, d_out, T, seed): other sizes, the square case d_in == d_out, one token."""
    return [(4, 4, 5, 21), (5, 3, 1, 22), (8, 6, 10, 23)]


@step("trainable_attention.init_qkv")
class TestInitQKV:
    def test_values(self, check):
        for name, x, seed, *_ in document_cases():
            check.call(x.shape[1], D_OUT, seed=seed, case=f"d_in=3, d_out=2 after torch.manual_seed({seed}) ({name})",
                       public=True, check_parameter_type=True)

    def test_randomized(self, check):
        for d_in, d_out, seed in [(4, 4, 31), (7, 2, 32), (1, 5, 33)]:
            check.call(d_in, d_out, seed=seed, case=f"d_in={d_in}, d_out={d_out}, seed {seed}", check_parameter_type=True)


@step("trainable_attention.project")
class TestProject:
    def _cases(self, check, grad):
        for name, x, _seed, Wq, Wk, Wv in document_cases():
            check.call(x[documents.QUERY_INDEX].clone(), Wq, case=f"{name}: query of x(2)", public=True, grad=grad,
                       arg_names=["x", "W"])
            check.call(x, Wk, case=f"{name}: all keys", public=True, grad=grad, arg_names=["x", "W"])

    def test_values(self, check):
        self._cases(check, False)

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for shape, d_out, seed in [((2, 5, 4), 4, 41), ((3,), 7, 42), ((6, 2), 3, 43)]:
            check.call(randn(*shape, seed=seed, dtype=F64), randn(shape[-1], d_out, seed=seed + 1, dtype=F64),
                       case=f"x of shape {list(shape)}, d_out={d_out}", grad=True, arg_names=["x", "W"])


@step("trainable_attention.attention_scores_for_query")
class TestAttentionScoresForQuery:
    def _cases(self, check, grad):
        for name, x, _seed, Wq, Wk, _Wv in document_cases():
            check.call(x[documents.QUERY_INDEX] @ Wq, x @ Wk, case=f"{name}: query x(2) against all keys",
                       public=True, grad=grad, arg_names=["query", "keys"])

    def test_values(self, check):
        self._cases(check, False)
        x, Wq, Wk, _Wv = book_float64()
        check.call(x[documents.QUERY_INDEX] @ Wq, x @ Wk, case="book (float64): query x(2) against all keys",
                   public=True, arg_names=["query", "keys"])

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for T, d, seed in [(1, 2, 51), (8, 5, 52), (3, 9, 53)]:
            check.call(randn(d, seed=seed, dtype=F64), randn(T, d, seed=seed + 1, dtype=F64),
                       case=f"T={T}, d_out={d}", grad=True, arg_names=["query", "keys"])


@step("trainable_attention.scaled_attention_weights")
class TestScaledAttentionWeights:
    mistakes = scaled_weight_mistakes(None)

    def _cases(self, check, grad):
        for name, x, _seed, Wq, Wk, _Wv in document_cases():
            scores = (x[documents.QUERY_INDEX] @ Wq) @ (x @ Wk).T
            check.call(scores, 2, case=f"{name}: scores of x(2), d_k=2", public=True, grad=grad,
                       arg_names=["attn_scores", "d_k"], mistakes=self.mistakes)
            all_scores = (x @ Wq) @ (x @ Wk).T
            check.call(all_scores, 2, case=f"{name}: all scores, d_k=2", public=True, grad=grad,
                       arg_names=["attn_scores", "d_k"], mistakes=self.mistakes)

    def test_values(self, check):
        self._cases(check, False)
        # Large scores: a softmax without the max subtracted (exp of the raw scores) overflows to inf, then NaN.
        check.call(torch.tensor([[400.0, -50.0, 390.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), 4, public=True,
                   case="large scores (up to 400), ties (all-zero scores), d_k=4", arg_names=["attn_scores", "d_k"],
                   mistakes=self.mistakes)
        x, Wq, Wk, _Wv = book_float64()
        check.call((x @ Wq) @ (x @ Wk).T, 2, case="book (float64): all scores, d_k=2", public=True,
                   arg_names=["attn_scores", "d_k"], mistakes=self.mistakes)

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for shape, d_k, seed in [((2, 5, 5), 16, 61), ((7,), 3, 62), ((4, 4), 64, 63)]:
            check.call(randn(*shape, seed=seed, dtype=F64) * 4, d_k, case=f"scores {list(shape)}, d_k={d_k}",
                       grad=True, arg_names=["attn_scores", "d_k"], mistakes=self.mistakes)
        check.call(randn(2, 3, 3, seed=64) * 1000, 4, case="large scores [2, 3, 3] (up to thousands), d_k=4",
                   grad=True, arg_names=["attn_scores", "d_k"])
        check.call(torch.tensor([[-3.0]], dtype=F64), 2, case="one token (T=1), a negative score", grad=True,
                   arg_names=["attn_scores", "d_k"])


@step("trainable_attention.context_vector")
class TestTrainableContextVector:
    def _cases(self, check, grad):
        for name, x, _seed, Wq, Wk, Wv in document_cases():
            w = torch.softmax((x[documents.QUERY_INDEX] @ Wq) @ (x @ Wk).T / 2**0.5, dim=-1)
            check.call(w, x @ Wv, case=f"{name}: weights of x(2), all values", public=True, grad=grad,
                       arg_names=["attn_weights", "values"])

    def test_values(self, check):
        self._cases(check, False)
        x, Wq, Wk, Wv = book_float64()
        w = torch.softmax((x[documents.QUERY_INDEX] @ Wq) @ (x @ Wk).T / 2**0.5, dim=-1)
        check.call(w, x @ Wv, case="book (float64): weights of x(2), all values", public=True,
                   arg_names=["attn_weights", "values"])

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for T, d, seed in [(1, 3, 71), (6, 4, 72), (10, 2, 73)]:
            w = torch.softmax(randn(T, seed=seed, dtype=F64), -1)
            check.call(w, randn(T, d, seed=seed + 1, dtype=F64), case=f"T={T}, d_out={d}", grad=True,
                       arg_names=["attn_weights", "values"])


class _SelfAttention:
    """Counts shared by SelfAttention_v1 and _v2: parameters, forward, gradients, randomized."""

    seeds = {}  # document name -> seed of the weights

    def mistakes(self):
        return {}

    def test_parameters(self, check):
        for name, x, seed, *_ in document_cases():
            check.parameters([x.shape[1], D_OUT], seed=self.seeds.get(name, seed), public=True,
                             case=f"SelfAttention(3, 2) after torch.manual_seed({self.seeds.get(name, seed)})")

    def _forward(self, check, grad):
        for name, x, seed, *_ in document_cases():
            check.module([x.shape[1], D_OUT], x, seed=self.seeds.get(name, seed), grad=grad, public=True,
                         case=f"{name} input", mistakes=self.mistakes())

    def test_forward(self, check):
        self._forward(check, False)

    def test_gradients(self, check):
        self._forward(check, True)

    def test_randomized(self, check):
        for d_in, d_out, T, seed in module_random_cases():
            x = rand(T, d_in, seed=seed)
            check.parameters([d_in, d_out], seed=seed, case=f"d_in={d_in}, d_out={d_out}")
            check.module([d_in, d_out], x, seed=seed, grad=True, case=f"d_in={d_in}, d_out={d_out}, T={T}",
                         mistakes=self.mistakes())


@step("trainable_attention.SelfAttention_v1")
class TestSelfAttentionV1(_SelfAttention):
    def mistakes(self):
        return v1_mistakes()


@step("trainable_attention.SelfAttention_v2")
class TestSelfAttentionV2(_SelfAttention):
    seeds = {"book": documents.SEED_V2}

    def mistakes(self):
        return linear_mistakes(causal=False)

    def test_randomized(self, check):
        super().test_randomized(check)
        x = rand(4, 3, seed=81)
        check.module([3, 5], x, init_kwargs={"qkv_bias": True}, seed=81, grad=True, case="qkv_bias=True")


def _v2_then_v1(seed_v2, seed_v1, d_in, d_out):
    return [{"$module": {"target": "trainable_attention.SelfAttention_v2", "init_args": [d_in, d_out],
                         "seed": seed_v2, "standin": True}},
            {"$module": {"target": "trainable_attention.SelfAttention_v1", "init_args": [d_in, d_out],
                         "seed": seed_v1, "standin": True}}]


@step("trainable_attention.transfer_weights")
class TestTransferWeights:
    def test_values(self, check):
        check.call(*_v2_then_v1(documents.SEED_V2, 123, 3, 2), case="SelfAttention_v2(3, 2) seed 789 into _v1 seed 123",
                   public=True, fields=["output", "modules_after"], arg_names=["sa_v2", "sa_v1"])

    def test_randomized(self, check):
        for d_in, d_out, seed in [(4, 4, 91), (2, 6, 92)]:
            check.call(*_v2_then_v1(seed, seed + 1, d_in, d_out), case=f"d_in={d_in}, d_out={d_out}",
                       fields=["output", "modules_after"], arg_names=["sa_v2", "sa_v1"])


@step("trainable_attention.dot_product_variance")
class TestDotProductVariance:
    def test_values(self, check):
        for dim in (5, 20):
            check.call(dim, 1000, {"$gen": 100}, case=f"dim={dim}, 1000 trials, generator seeded 100", public=True,
                       arg_names=["dim", "num_trials", "generator"])

    def test_randomized(self, check):
        for dim, trials, seed in [(100, 500, 7), (1, 50, 8), (64, 2000, 9)]:
            check.call(dim, trials, {"$gen": seed}, case=f"dim={dim}, {trials} trials",
                       arg_names=["dim", "num_trials", "generator"])
