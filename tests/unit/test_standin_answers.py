"""The trusted side answers a stand-in call asked before as the reference worker answered it
(``sandbox/standin_answers.py``), and only such a call: the same data, the same answer, the same gradients.

The relay is the real ``StandinCalls`` and ``ReferenceWorker.call``; the reference worker behind it is
``reference_server.Server`` in this process, reached through the wire's frames as the channel carries them."""
from __future__ import annotations

import os

import pytest
import torch

from autograder.sandbox import reference_server as trusted_side, standin_answers
from autograder.worker import reference_server, standins, wire
from solutions import causal_attention

STEP = "causal_attention.CausalAttention"


def _split(frame: bytes) -> tuple[bytes, bytes]:
    hlen = int.from_bytes(frame[:4], "big")
    return frame[4:4 + hlen], frame[4 + hlen + 8:]


class _InProcessWorker:
    """The reference worker's channel, as ``ReferenceWorker`` sees it: a frame in, a frame's parts out."""

    dead = False

    def __init__(self, server: reference_server.Server, runs: list):
        self.server, self.runs = server, runs

    def exchange(self, frame: bytes, deadline: float):
        request = wire.unpack(*_split(frame))
        self.runs.append(request["op"])
        ours = torch.get_rng_state()  # the reference worker's random state is its own (a process)
        answer = self.server.answer(request)
        torch.set_rng_state(ours)
        header, blob = _split(wire.pack(answer))
        return header, blob, wire.parse(header)


@pytest.fixture
def relay():
    """(a student's proxies maker, the ops that reached the reference worker, the relay)"""
    runs: list = []
    worker = trusted_side.ReferenceWorker(zygote=None, sources={}, steps=[STEP], limits={})
    worker._worker, worker._owner = _InProcessWorker(reference_server.Server({STEP: causal_attention.CausalAttention}),
                                                     runs), os.getpid()

    relayed = trusted_side.StandinCalls(worker, lambda: {STEP})

    def call(message: dict) -> dict:  # a student's worker -> the trusted side -> the reference worker, and back
        header, blob = _split(wire.pack(message))
        return wire.unpack(*_split(relayed(wire.parse(header), blob, deadline=float("inf"))))

    def student():
        return standins.build({STEP: "class"}, call)[STEP]

    return student, runs, worker


def _wrapper_run(proxy, x: torch.Tensor, grad_scale: float = 1.0):
    """A wrapper of two heads in training mode (dropout draws), forward and backward: its output and gradients."""
    torch.manual_seed(123)
    heads = torch.nn.ModuleList([proxy(3, 2, 6, 0.5) for _ in range(2)])
    x = x.clone().requires_grad_(True)
    torch.manual_seed(9)
    out = torch.cat([h(x) for h in heads], dim=-1)
    (out * grad_scale).sum().backward()
    return [out.detach(), x.grad] + [p.grad for p in heads.parameters()]


def _x(shift: float = 0.0) -> torch.Tensor:
    return torch.rand(2, 6, 3, generator=torch.Generator().manual_seed(3)) + shift


def test_the_same_call_from_another_student_is_answered_alike_without_the_reference_worker(relay):
    student, runs, worker = relay
    first = _wrapper_run(student(), _x())
    assert runs, "the first student's calls reach the reference worker"
    runs.clear()
    second = _wrapper_run(student(), _x())
    assert runs == []
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    assert worker.answers.hits > 0


def test_other_tensors_reach_the_reference_worker_and_get_its_answer(relay):
    student, runs, _ = relay
    _wrapper_run(student(), _x())
    runs.clear()
    shifted = _wrapper_run(student(), _x(0.25))
    assert "forward" in runs
    torch.manual_seed(123)
    heads = torch.nn.ModuleList([causal_attention.CausalAttention(3, 2, 6, 0.5) for _ in range(2)])
    torch.manual_seed(9)
    assert torch.allclose(shifted[0], torch.cat([h(_x(0.25)) for h in heads], dim=-1), atol=1e-6)


def test_control_a_key_without_the_tensors_would_answer_other_tensors_wrongly(relay, monkeypatch):
    """The control: keyed on the header alone, the shifted input gets the first answer back (so the test above can
    fail)."""
    monkeypatch.setattr(standin_answers.StandinAnswers, "key", staticmethod(lambda header, blob: header))
    student, _, _ = relay
    first = _wrapper_run(student(), _x())
    shifted = _wrapper_run(student(), _x(0.25))
    assert torch.equal(first[0], shifted[0])


def test_a_spent_graph_answered_again_gives_the_reference_s_gradients(relay):
    """The second student's forward is answered from memory, naming a graph the first one's backward spent; its other
    backward is answered stale (by the trusted side: the graph is spent) and computed again from the same inputs and
    random state (dropout alike)."""
    student, runs, _ = relay
    _wrapper_run(student(), _x())
    runs.clear()
    again = _wrapper_run(student(), _x(), grad_scale=3.0)
    assert runs and "forward" in runs and "backward" not in runs
    fresh = _wrapper_run(standins.build({STEP: "class"}, _direct_call())[STEP], _x(), grad_scale=3.0)
    for a, b in zip(again, fresh):
        assert torch.equal(a, b)


def test_a_graph_of_an_earlier_batch_is_answered_stale_without_the_reference_worker(relay):
    """A batch that starts with an earlier batch's kept answers gets a forward's answer naming a graph its own reference
    worker never made: that backward is answered stale on the trusted side, never sent to the worker, and the proxy's
    forward again with the gradients asked for gives the reference's gradients. The control: a graph this batch's
    worker made goes to it."""
    student, runs, worker = relay
    _wrapper_run(student(), _x())
    later_runs: list = []
    later = trusted_side.ReferenceWorker(zygote=None, sources={}, steps=[STEP], limits={})
    later._worker, later._owner = _InProcessWorker(reference_server.Server({STEP: causal_attention.CausalAttention}),
                                                   later_runs), os.getpid()
    later.answers.preload(worker.answers.items())
    relayed = trusted_side.StandinCalls(later, lambda: {STEP})

    def call(message: dict) -> dict:
        header, blob = _split(wire.pack(message))
        return wire.unpack(*_split(relayed(wire.parse(header), blob, deadline=float("inf"))))
    again = _wrapper_run(standins.build({STEP: "class"}, call)[STEP], _x(), grad_scale=3.0)  # new gradients: not kept
    assert "forward" in later_runs and "backward" not in later_runs
    fresh = _wrapper_run(standins.build({STEP: "class"}, _direct_call())[STEP], _x(), grad_scale=3.0)
    for a, b in zip(again, fresh):
        assert torch.equal(a, b)
    runs.clear()  # the control: this batch's own graphs reach its reference worker
    _wrapper_run(student(), _x(0.5))
    assert "backward" in runs


def test_the_trusted_side_remembers_every_graph_the_reference_worker_may_still_keep():
    """It answers stale only graphs the worker no longer keeps: it remembers at least as many as the worker keeps."""
    assert trusted_side.GRAPHS >= reference_server.KEPT


def test_a_graph_of_a_reference_worker_that_is_gone_is_answered_stale_without_a_relay(relay):
    """A graph made by a reference worker that has since died (or by the batch process, before a job forked) is kept by
    no worker now: stale on the trusted side. The control: the same graph, its worker running, is relayed."""
    student, runs, worker = relay
    proxy = student()
    torch.manual_seed(123)
    head = proxy(3, 2, 6, 0.5)
    torch.manual_seed(9)
    out = head(_x().requires_grad_(True))
    (graph,) = list(worker._graphs)
    backward = {"op": "backward", "step": STEP, "kept": graph, "outputs": [torch.ones_like(out)]}
    relayed = trusted_side.StandinCalls(worker, lambda: {STEP})

    def ask(message: dict) -> dict:
        header, blob = _split(wire.pack(message))
        return wire.unpack(*_split(relayed(wire.parse(header), blob, deadline=float("inf"))))
    owner = worker._owner
    for gone in ("another process's", "dead"):
        runs.clear()
        if gone == "dead":
            worker._owner, worker._worker.dead = owner, True
        else:
            worker._owner = owner + 1
        assert ask(backward)["error"]["type"] == reference_server.STALE and runs == [], gone
    worker._owner, worker._worker.dead = owner, False  # the control: its worker running, the graph goes to it
    assert ask(backward)["ok"] is True and runs == ["backward"]


def _direct_call():
    server = reference_server.Server({STEP: causal_attention.CausalAttention})

    def call(message):
        ours = torch.get_rng_state()
        answer = server.answer(wire.unpack(*_split(wire.pack(message))))
        torch.set_rng_state(ours)
        return wire.unpack(*_split(wire.pack(answer)))
    return call


def test_only_ok_answers_are_kept_and_the_bound_holds():
    memo = standin_answers.StandinAnswers(max_bytes=100, max_answer=60)
    ok = b'{"ok": true, "output": 1}'
    for n, (header, frame) in enumerate([(b'{"ok": false, "error": {"type": "$stale"}}', b"s" * 10),
                                         (b'{"ok": false, "error": {"type": "ValueError"}}', b"e" * 10),
                                         (ok, b"x" * 61)]):
        memo.put(memo.key(b"call", bytes([n])), header, frame)
        assert memo.get(memo.key(b"call", bytes([n]))) is None
    for n in range(3):
        memo.put(memo.key(b"call", bytes([n])), ok, bytes([n]) * 40)
    assert memo.get(memo.key(b"call", bytes([0]))) is None  # the oldest gave way: 120 bytes > 100
    assert memo.get(memo.key(b"call", bytes([2]))) == bytes([2]) * 40
    assert memo.key(b"ab", b"c") != memo.key(b"a", b"bc")
