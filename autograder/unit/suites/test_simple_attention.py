"""Hidden suite: simplified self-attention (no trainable weights)."""
import torch

from autograder.unit import documents
from autograder.grading.suites.authoring import rand, randn, step

F64 = torch.float64


def document_inputs(float64: bool = False):
    """The documents' inputs; with ``float64``, the book's again in float64 (public: a float64 input is legal,
    and a loop filling ``torch.empty(T)`` returns float32, which the hidden randomized cases catch too)."""
    for name, (factory, _seed, _where) in documents.INPUTS.items():
        yield name, factory()
    if float64:
        yield "book (float64)", documents.book_inputs().to(F64)


# (T, d, dtype, seed): other shapes, a single token, float64
RANDOM_SHAPES = [(1, 1, torch.float32, 11), (7, 5, torch.float32, 12), (4, 16, F64, 13), (9, 3, torch.float32, 14)]


def _query_cases(check, grad, public):
    for name, x in document_inputs(float64=not grad):
        check.call(x, x[documents.QUERY_INDEX].clone(), case=f"{name} input, query x(2)", public=public,
                   grad=grad, arg_names=["inputs", "query"])


@step("simple_attention.attention_scores")
class TestAttentionScores:
    def test_values(self, check):
        _query_cases(check, grad=False, public=True)

    def test_gradients(self, check):
        _query_cases(check, grad=True, public=True)

    def test_randomized(self, check):
        for T, d, dtype, seed in RANDOM_SHAPES:
            check.call(rand(T, d, seed=seed, dtype=dtype), randn(d, seed=seed + 100, dtype=dtype),
                       case=f"random {T}x{d} {dtype}", grad=True, arg_names=["inputs", "query"])


def _score_vectors(float64: bool = False):
    for name, x in document_inputs(float64):
        yield name, x @ x[documents.QUERY_INDEX]


def _vector_step(check, grad, mistakes=None):
    for name, scores in _score_vectors(float64=not grad):
        check.call(scores, case=f"{name} input, scores of x(2)", public=True, grad=grad,
                   arg_names=["scores"], mistakes=mistakes)


def _vector_random(check, positive=True):
    for T, _d, dtype, seed in RANDOM_SHAPES:
        v = rand(T, seed=seed, dtype=dtype, low=0.1, high=2.0) if positive else randn(T, seed=seed, dtype=dtype)
        check.call(v, case=f"random length {T} {dtype}", grad=True, arg_names=["scores"])


@step("simple_attention.normalize_sum")
class TestNormalizeSum:
    mistakes = {"used a softmax instead of dividing by the sum": lambda s: torch.softmax(s, dim=0),
                "divided by the sum of absolute values (F.normalize(p=1)) instead of the sum":
                    lambda s: s / s.abs().sum()}

    def test_values(self, check):
        _vector_step(check, False, self.mistakes)
        # Scores may be negative or zero (dot products): the sum, not the sum of absolute values.
        check.call(torch.tensor([2.0, -0.5, 0.0, 1.0, 0.5]), case="scores with a negative and a zero entry",
                   public=True, arg_names=["scores"], mistakes=self.mistakes)

    def test_gradients(self, check):
        _vector_step(check, True, self.mistakes)

    def test_randomized(self, check):
        _vector_random(check)
        check.call(torch.tensor([3.0, -1.0, 0.0, -0.5, 2.5, 1.0], dtype=F64), case="length 6, mixed signs float64",
                   grad=True, arg_names=["scores"], mistakes=self.mistakes)


@step("simple_attention.softmax_naive")
class TestSoftmaxNaive:
    mistakes = {"normalized by the sum without exp": lambda x: x / x.sum(dim=0),
                "exp without dividing by the sum": lambda x: torch.exp(x)}

    def test_values(self, check):
        _vector_step(check, False, self.mistakes)
        check.call(torch.tensor([0.1, -0.2, 0.3, -0.2, 0.5]), case="document 004 sharpness tensor", public=True)

    def test_gradients(self, check):
        _vector_step(check, True, self.mistakes)

    def test_randomized(self, check):
        _vector_random(check, positive=False)


def _weights_for(x):
    return torch.softmax(x @ x[documents.QUERY_INDEX], dim=0)


@step("simple_attention.context_vector")
class TestContextVector:
    def _cases(self, check, grad):
        for name, x in document_inputs(float64=not grad):
            check.call(x, _weights_for(x), case=f"{name} input, weights of x(2)", public=True, grad=grad,
                       arg_names=["inputs", "attn_weights"],
                       mistakes={"summed the inputs without weighting them": lambda i, w: i.sum(0)})

    def test_values(self, check):
        self._cases(check, False)

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for T, d, dtype, seed in RANDOM_SHAPES:
            check.call(rand(T, d, seed=seed, dtype=dtype), torch.softmax(randn(T, seed=seed, dtype=dtype), 0),
                       case=f"random {T}x{d} {dtype}", grad=True, arg_names=["inputs", "attn_weights"])


@step("simple_attention.all_attention_scores")
class TestAllAttentionScores:
    def _cases(self, check, grad):
        for name, x in document_inputs(float64=not grad):
            check.call(x, case=f"{name} input", public=True, grad=grad, arg_names=["inputs"])

    def test_values(self, check):
        self._cases(check, False)

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for T, d, dtype, seed in RANDOM_SHAPES:
            check.call(rand(T, d, seed=seed, dtype=dtype), case=f"random {T}x{d} {dtype}", grad=True,
                       arg_names=["inputs"])


@step("simple_attention.all_attention_weights")
class TestAllAttentionWeights:
    mistakes = {"softmax over dim 0 (columns) instead of the last dim": lambda s: torch.softmax(s, dim=0),
                "normalized rows by their sum instead of a softmax": lambda s: s / s.sum(-1, keepdim=True)}

    def _cases(self, check, grad):
        for name, x in document_inputs(float64=not grad):
            check.call(x @ x.T, case=f"{name} input, all scores", public=True, grad=grad,
                       arg_names=["attn_scores"], mistakes=self.mistakes)

    def test_values(self, check):
        self._cases(check, False)
        check.call(torch.tensor([[300.0, -20.0, 295.0], [0.0, 0.0, 0.0], [-5.0, 1.0, 1.0]]), public=True,
                   case="large scores (up to 300), ties, and all-zero scores", arg_names=["attn_scores"],
                   mistakes=self.mistakes)

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for T, _d, dtype, seed in RANDOM_SHAPES:
            check.call(randn(T, T, seed=seed, dtype=dtype) * 3, case=f"random {T}x{T} {dtype}", grad=True,
                       arg_names=["attn_scores"], mistakes=self.mistakes)
        check.call(randn(4, 4, seed=15) * 500, case="large scores 4x4 (hundreds)", grad=True,
                   arg_names=["attn_scores"], mistakes=self.mistakes)


@step("simple_attention.all_context_vectors")
class TestAllContextVectors:
    mistakes = {"multiplied by the transposed weights (weights.T @ inputs)": lambda i, w: w.T @ i}

    def _cases(self, check, grad):
        for name, x in document_inputs(float64=not grad):
            check.call(x, torch.softmax(x @ x.T, dim=-1), case=f"{name} input, all weights", public=True,
                       grad=grad, arg_names=["inputs", "attn_weights"], mistakes=self.mistakes)

    def test_values(self, check):
        self._cases(check, False)

    def test_gradients(self, check):
        self._cases(check, True)

    def test_randomized(self, check):
        for T, d, dtype, seed in RANDOM_SHAPES:
            w = torch.softmax(randn(T, T, seed=seed, dtype=dtype), dim=-1)
            check.call(rand(T, d, seed=seed + 1, dtype=dtype), w, case=f"random {T}x{d} {dtype}", grad=True,
                       arg_names=["inputs", "attn_weights"], mistakes=self.mistakes)
