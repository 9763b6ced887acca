"""Function stand-ins (``op: "call"``) in one process, the wire between proxy and reference worker kept: what a
proxy gives back is the reference's answer for a function of its tensors (values, gradients, dropout draws),
and not for a step that creates parameters, takes a module or a generator. The steps of the
second kind are found from the reference's own answers and never held (grading/suites/proxied_functions.py)."""
from __future__ import annotations

import pytest
import torch

from autograder.grading.suites import proxied_functions
from autograder.sandbox import answers
from autograder.worker import reference_server, runtime, standins, wire
from solutions import causal_attention, trainable_attention

FUNCTIONS = {"trainable_attention.init_qkv": trainable_attention.init_qkv,
             "trainable_attention.scaled_attention_weights": trainable_attention.scaled_attention_weights,
             "trainable_attention.transfer_weights": trainable_attention.transfer_weights,
             "trainable_attention.dot_product_variance": trainable_attention.dot_product_variance,
             "causal_attention.apply_dropout": causal_attention.apply_dropout}
CLASSES = {"trainable_attention.SelfAttention_v1": trainable_attention.SelfAttention_v1,
           "trainable_attention.SelfAttention_v2": trainable_attention.SelfAttention_v2}


def _split(frame: bytes) -> tuple[bytes, bytes]:
    hlen = int.from_bytes(frame[:4], "big")
    return frame[4:4 + hlen], frame[4 + hlen + 8:]


@pytest.fixture(scope="module")
def proxies():
    server = reference_server.Server({**FUNCTIONS, **CLASSES})

    def call(message):  # as the wire carries it, both ways; the server's random state is its own (a process)
        ours = torch.get_rng_state()
        answer = server.answer(wire.unpack(*_split(wire.pack(message))))
        torch.set_rng_state(ours)
        return wire.unpack(*_split(wire.pack(answer)))

    kinds = {**{s: "function" for s in FUNCTIONS}, **{s: "class" for s in CLASSES}}
    return standins.build(kinds, call)


def test_a_function_of_its_tensors_is_the_reference_s_values_and_gradients(proxies):
    scores = torch.tensor([[0.5, -2.0, 3.0], [1.0, 0.0, -1.0]])
    mine, theirs = scores.clone().requires_grad_(True), scores.clone().requires_grad_(True)
    out = proxies["trainable_attention.scaled_attention_weights"](mine, 2)
    expected = trainable_attention.scaled_attention_weights(theirs, 2)
    assert torch.allclose(out, expected)
    upstream = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]])
    out.backward(upstream)
    expected.backward(upstream)
    assert torch.allclose(mine.grad, theirs.grad)


def test_a_function_s_dropout_draws_are_the_reference_s(proxies):
    weights = torch.rand(4, 4)
    torch.manual_seed(5)
    out = proxies["causal_attention.apply_dropout"](weights, 0.5)
    after = torch.get_rng_state()
    torch.manual_seed(5)
    assert torch.equal(out, causal_attention.apply_dropout(weights, 0.5))
    assert torch.equal(after, torch.get_rng_state())  # the draws made here too: the next ones alike


@pytest.mark.xfail(strict=True, reason="function stand-in bug (worker/standins.py, reference_server.py): a proxy "
                   "returns detached plain tensors, so init_qkv's nn.Parameters come back with requires_grad=False "
                   "and a module that assigns them has no parameters; held back by grading/suites/proxied_functions.py")
def test_a_function_proxy_gives_back_the_parameters_it_creates(proxies):
    torch.manual_seed(123)
    made = proxies["trainable_attention.init_qkv"](3, 2)
    assert all(isinstance(p, torch.nn.Parameter) and p.requires_grad for p in made)


@pytest.mark.xfail(strict=True, reason="function stand-in bug: a module argument does not travel (wire.encode: "
                   "'cannot send a SelfAttention_v2 over the wire'), nor would its change in place come back")
def test_a_function_proxy_changes_the_modules_it_is_given(proxies):
    torch.manual_seed(1)
    v2 = proxies["trainable_attention.SelfAttention_v2"](3, 2)
    v1 = proxies["trainable_attention.SelfAttention_v1"](3, 2)
    proxies["trainable_attention.transfer_weights"](v2, v1)
    assert torch.equal(v1.W_query, v2.W_query.weight.T)


@pytest.mark.xfail(strict=True, reason="function stand-in bug: a torch.Generator argument does not travel "
                   "('cannot send a Generator over the wire'), nor would its advanced state come back")
def test_a_function_proxy_draws_from_the_generator_it_is_given(proxies):
    assert proxies["trainable_attention.dot_product_variance"](8, 100, torch.Generator().manual_seed(0))


def _answer(function, args, seed=None):
    ws = runtime.Workspace(None, {}, {"m.f": function})
    request = {"kind": "function", "target": "m.f", "args": args, "kwargs": {}, "seed": seed, "standin": True}
    answer = runtime.run(request, ws)  # as the reference answers in the trusted process (grading/suites/reference.py)
    answer["modified_args"] = answers.modified_by_word(request, answer.pop("args_after", None))
    return {"request": request}, answer


def test_steps_a_proxy_cannot_stand_in_for_are_found_from_the_reference_s_answers():
    kinds = {"m.init": "function", "m.pure": "function", "m.transfer": "function", "m.variance": "function",
             "m.inplace": "function"}
    cache = {("m.init", "values", 0): _answer(trainable_attention.init_qkv, [3, 2], seed=1),
             ("m.pure", "values", 0): _answer(trainable_attention.scaled_attention_weights, [torch.rand(3, 3), 2]),
             ("m.transfer", "values", 0): ({"request": {"kind": "function", "args": [{"$module": {"target": "m.V2"}}]}},
                                           {"ok": True, "output": None, "output_facts": None}),
             ("m.variance", "values", 0): ({"request": {"kind": "function", "args": [8, 100, {"$gen": 0}]}},
                                           {"ok": True, "output": (1.0, 1.0), "output_facts": [None, None]}),
             ("m.inplace", "values", 0): _answer(lambda x: x.div_(2), [torch.ones(3)])}
    assert proxied_functions.held_back(cache, kinds) == {"m.init", "m.transfer", "m.variance", "m.inplace"}
    # control: the same cases as classes' (no function proxy) hold nothing back; a pure function travels
    assert proxied_functions.held_back(cache, {s: "class" for s in kinds}) == set()
    case, answer = cache[("m.pure", "values", 0)]
    assert proxied_functions.travels(case["request"], answer)
