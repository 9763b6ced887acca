"""The stand-in proxies and the reference worker, in one process (the wire between them kept): a proxy
built from a seed holds exactly the reference's parameters and leaves the random state where the reference
would; its forward, its gradients and its seeded dropout are the reference's."""
from __future__ import annotations

import inspect
import json

import pytest
import torch

from autograder.worker import module_tree, reference_server, standins, wire
from solutions import causal_attention, multihead_attention, trainable_attention

STEPS = {"causal_attention.CausalAttention": causal_attention.CausalAttention,
         "multihead_attention.MultiHeadAttention": multihead_attention.MultiHeadAttention,
         "trainable_attention.SelfAttention_v1": trainable_attention.SelfAttention_v1,
         "trainable_attention.SelfAttention_v2": trainable_attention.SelfAttention_v2}


@pytest.fixture(scope="module")
def proxies():
    server = reference_server.Server(dict(STEPS))
    calls = []

    def call(message):  # as the wire carries it, both ways; the server's random state is its own (a process)
        calls.append(message["op"])
        ours = torch.get_rng_state()
        answer = server.answer(wire.unpack(*_split(wire.pack(message))))
        torch.set_rng_state(ours)
        return wire.unpack(*_split(wire.pack(answer)))

    built = standins.build({step: "class" for step in STEPS}, call)
    return built, calls


def _split(frame: bytes) -> tuple[bytes, bytes]:
    hlen = int.from_bytes(frame[:4], "big")
    return frame[4:4 + hlen], frame[4 + hlen + 8:]


CASES = [("causal_attention.CausalAttention", (3, 2, 6, 0.0), {}),
         ("causal_attention.CausalAttention", (3, 4, 6, 0.5), {"qkv_bias": True}),
         ("multihead_attention.MultiHeadAttention", (3, 4, 6, 0.0, 2), {}),
         ("trainable_attention.SelfAttention_v1", (3, 2), {}),
         ("trainable_attention.SelfAttention_v2", (3, 2), {})]


def _x(step):
    torch.manual_seed(7)
    return torch.rand(2, 6, 3) if "causal" in step or "multihead" in step else torch.rand(6, 3)


@pytest.mark.parametrize("step,args,kwargs", CASES)
def test_a_proxy_draws_the_reference_s_parameters_and_random_state(proxies, step, args, kwargs):
    built, _ = proxies
    torch.manual_seed(123)
    reference = STEPS[step](*args, **kwargs)
    after_reference = torch.get_rng_state()
    torch.manual_seed(123)
    proxy = built[step](*args, **kwargs)
    assert torch.equal(torch.get_rng_state(), after_reference)
    assert [n for n, _ in proxy.named_parameters()] == [n for n, _ in reference.named_parameters()]
    for (name, mine), (_, theirs) in zip(proxy.named_parameters(), reference.named_parameters()):
        assert torch.equal(mine, theirs), name
    assert {n: b.shape for n, b in proxy.named_buffers()} == {n: b.shape for n, b in reference.named_buffers()}


@pytest.mark.parametrize("step,args,kwargs", CASES)
def test_forward_gradients_and_dropout_are_the_reference_s(proxies, step, args, kwargs):
    built, _ = proxies
    torch.manual_seed(123)
    reference = STEPS[step](*args, **kwargs)
    torch.manual_seed(123)
    proxy = built[step](*args, **kwargs)
    for training in (False, True):
        reference.train(training)
        proxy.train(training)
        outs, grads = [], []
        for module in (reference, proxy):
            x = _x(step).requires_grad_(True)
            torch.manual_seed(99)  # the same dropout draws, from this process's state
            out = module(x)
            out.backward(torch.ones_like(out))
            outs.append(out.detach())
            grads.append([x.grad] + [p.grad.clone() for p in module.parameters()])
            module.zero_grad()
        assert torch.allclose(outs[0], outs[1], atol=1e-6)
        for a, b in zip(*grads):
            assert torch.allclose(a, b, atol=1e-6)


def test_a_call_sends_only_what_changed(proxies):
    """GPT-2's 2.4 M parameters are not sent again on every call: only tensors changed since construction."""
    built, calls = proxies
    seen = []
    torch.manual_seed(1)
    proxy = built["multihead_attention.MultiHeadAttention"](4, 4, 6, 0.0, 2)
    original = standins._sent
    standins._sent = lambda message: (seen.append(message), original(message))[1]
    try:
        proxy(torch.rand(1, 3, 4))
        with torch.no_grad():
            proxy.W_query.weight.add_(1.0)
        proxy(torch.rand(1, 3, 4))
    finally:
        standins._sent = original
    first, second = [m for m in seen if m["op"] == "forward"]
    assert len(first["held"]) == first["n_state"]  # nothing changed: every tensor is held there
    assert len(second["held"]) == second["n_state"] - 1  # W_query.weight changed: sent again


def test_an_error_of_the_reference_is_raised_as_the_reference_raised_it(proxies):
    built, _ = proxies
    with pytest.raises(ValueError):
        built["multihead_attention.MultiHeadAttention"](3, 5, 6, 0.0, 2)


def test_no_proxy_holds_reference_code(proxies):
    built, _ = proxies
    for step, proxy in built.items():
        for member in vars(proxy).values():
            code = getattr(member, "__code__", None)
            if code is not None:
                assert inspect.getsourcefile(code).endswith("standins.py"), step


@pytest.mark.parametrize("change", [
    {"attrs": {"_forward_hooks": "x"}}, {"attrs": {"forward": 1}}, {"attrs": {"__class__": "int"}},
    {"attrs": {"d_out": {"not": "plain"}}}, {"class": "os.system", "step": False},
    {"class": "torch.nn.functional.linear", "step": False},
])
def test_a_crafted_module_tree_is_refused_by_the_reference_worker(change):
    """What a hostile worker may send as its module: data only, names that hide nothing, torch.nn layers only."""
    server = reference_server.Server(dict(STEPS))
    torch.manual_seed(0)
    tree = module_tree.describe(causal_attention.CausalAttention(3, 2, 6, 0.0), server.step_of)
    tree = {**tree, **{k: ({**tree[k], **v} if isinstance(v, dict) and k == "attrs" else v) for k, v in change.items()}}
    with pytest.raises(TypeError):
        module_tree.rebuild(tree, server.class_for)


def test_control_the_honest_tree_rebuilds():
    server = reference_server.Server(dict(STEPS))
    torch.manual_seed(0)
    module = causal_attention.CausalAttention(3, 2, 6, 0.0)
    again = module_tree.rebuild(module_tree.describe(module, server.step_of), server.class_for)
    assert module_tree.same_values(again, module)


def _wrapper_of(built, heads: int):
    """The solution's MultiHeadAttentionWrapper, its heads the CausalAttention proxy (as while it is graded)."""
    proxy = built["causal_attention.CausalAttention"]
    torch.manual_seed(123)
    return torch.nn.ModuleList([proxy(3, 2, 6, 0.0) for _ in range(heads)])


def test_every_head_is_held_there_after_its_first_call(proxies):
    """Two heads built from one cached answer: after a first call each, a forward and a backward cost one round trip
    each (the reference worker builds the second head as it was built here, and keeps it) - never a refused call
    followed by every tensor sent again."""
    built, calls = proxies
    heads = _wrapper_of(built, 2)
    x = torch.rand(2, 6, 3, requires_grad=True)
    torch.cat([h(x) for h in heads], dim=-1).sum().backward()  # the first call of each head
    calls.clear()
    for _ in range(3):
        torch.cat([h(x) for h in heads], dim=-1).sum().backward()
    assert calls == ["forward", "forward", "backward", "backward"] * 3


def test_a_backward_whose_graph_is_gone_is_computed_again_alike(proxies, monkeypatch):
    """The reference worker keeps a forward's graph for its backward; if it was dropped meanwhile, the forward is run
    there again from the same inputs and random state: the same gradients, with dropout."""
    built, calls = proxies
    torch.manual_seed(5)
    head = built["causal_attention.CausalAttention"](3, 4, 6, 0.5)
    grads = []
    for keep in (True, False):
        x = torch.rand(2, 6, 3, generator=torch.Generator().manual_seed(3)).requires_grad_(True)
        if not keep:  # as if the worker had kept other graphs since
            monkeypatch.setattr(reference_server, "KEPT", 0)
        torch.manual_seed(11)
        out = head(x)
        calls.clear()
        out.backward(torch.arange(out.numel(), dtype=out.dtype).reshape(out.shape))
        grads.append([x.grad.clone()] + [p.grad.clone() for p in head.parameters()])
        head.zero_grad()
        assert ("forward" in calls) is not keep, calls  # a backward without its graph runs the forward again
    for a, b in zip(*grads):
        assert torch.equal(a, b)


def test_a_forged_build_is_not_kept_under_another_module_s_name():
    """A call that names a module the reference worker holds under a handle, with a build that does not make it,
    is refused as stale: the worker keeps only what it built itself, under the name of what it built."""
    server = reference_server.Server(dict(STEPS))
    torch.manual_seed(0)
    honest_rng = torch.get_rng_state()
    init = '[[3, 2, 6, 0.0], {"$dict": {}}]'
    handle = standins.construct_handle("causal_attention.CausalAttention", init, honest_rng)
    rng_text = honest_rng.numpy().tobytes().hex()  # a build's random state travels as text
    forged = {"init": '[[3, 2, 6, 0.9], {"$dict": {}}]', "rng": rng_text}
    request = {"op": "forward", "step": "causal_attention.CausalAttention", "handle": handle, "held": [0, 1, 2, 3],
               "args": [[{"$in": 0}], {"$dict": {}}], "rng": honest_rng, "n_state": 4,
               "inputs": [torch.rand(1, 3, 3), None, None, None, None], "tree": json.dumps(_tree_of(3, 2, 6, 0.0))}
    assert server.answer({**request, "build": forged})["error"]["type"] == standins.STALE
    assert handle not in server.held
    # control: the honest build is built, kept under its own name, and answers
    assert server.answer({**request, "build": {"init": init, "rng": rng_text}})["ok"]
    assert handle in server.held


def _tree_of(*args):
    torch.manual_seed(0)
    module = causal_attention.CausalAttention(*args)
    return module_tree.describe(module, {causal_attention.CausalAttention: "causal_attention.CausalAttention"}.get, [])


def test_gpt2_s_causal_mask_travels_as_its_description(proxies):
    """GPT-2's 1024 x 1024 mask (4 MB) is not sent at construction: its description is, and the proxy's mask is the
    reference's, bit for bit; any other buffer travels as its values (the control)."""
    built, _ = proxies
    sizes = []
    original = standins._ask

    def measured(call, message):
        answer = original(call, message)
        sizes.append(len(wire.pack(answer)))
        return answer

    standins._ask = measured
    try:
        torch.manual_seed(123)
        proxy = built["multihead_attention.MultiHeadAttention"](768, 768, 1024, 0.0, 12)
    finally:
        standins._ask = original
    torch.manual_seed(123)
    reference = multihead_attention.MultiHeadAttention(768, 768, 1024, 0.0, 12)
    assert sizes and max(sizes) < 100_000, sizes
    for (name, mine), (_, theirs) in zip(proxy.named_buffers(), reference.named_buffers()):
        assert mine.dtype == theirs.dtype and torch.equal(mine, theirs), name
    for mask in (torch.triu(torch.ones(64, 64), diagonal=1), torch.tril(torch.ones(64, 64, dtype=torch.bool))):
        assert torch.equal(module_tree.expand(module_tree.compact(mask)), mask)
    other = torch.rand(64, 64)
    assert module_tree.compact(other) is other
