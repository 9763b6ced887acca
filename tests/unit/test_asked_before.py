"""A worker answers a stand-in call it asked before as the trusted side answered it then, without a round trip
(``worker/asked_before.py``): about one call in six of a correct submission. The trusted side here is a thread on
the other end of a socket pair, which counts what reaches it."""
from __future__ import annotations

import socket
import threading

import pytest
import torch

from autograder.worker import asked_before, wire


@pytest.fixture
def trusted_side():
    """(the worker's ``call``, the messages that reached the trusted side); it answers ``fail`` ops with an error."""
    ours, theirs = socket.socketpair()
    reached: list[dict] = []

    def serve():
        while True:
            try:
                message = wire.recv(theirs)["$callback"]
            except wire.WireError:
                return
            reached.append(message)
            if message["op"] == "fail":
                wire.send(theirs, {"ok": False, "error": {"type": "ValueError", "message": "no"}})
            else:
                wire.send(theirs, {"ok": True, "output": message["inputs"][0] * 2})

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield asked_before.through(ours), reached
    ours.close()
    thread.join(timeout=10)
    theirs.close()


def test_a_call_asked_before_is_answered_as_then_without_a_round_trip(trusted_side):
    call, reached = trusted_side
    x = torch.arange(6.0)
    first = call({"op": "call", "step": "m.f", "inputs": [x]})
    first["output"].zero_()  # the student's code may change what it was given: the next answer is decoded afresh
    again = call({"op": "call", "step": "m.f", "inputs": [x]})
    assert torch.equal(again["output"], x * 2)
    assert len(reached) == 1
    other = call({"op": "call", "step": "m.f", "inputs": [x + 1]})  # control: other data, another round trip
    assert torch.equal(other["output"], (x + 1) * 2) and len(reached) == 2


def test_an_error_answer_is_not_kept(trusted_side):
    call, reached = trusted_side
    for _ in range(2):
        assert call({"op": "fail", "step": "m.f", "inputs": [torch.ones(2)]})["ok"] is False
    assert len(reached) == 2


def test_what_is_kept_is_capped():
    kept = asked_before.AskedBefore(max_bytes=110, max_answer=60)
    kept.put(b"a", b'{"ok": true}', b"x" * 40)
    kept.put(b"b", b'{"ok": true}', b"x" * 70)  # over the largest answer kept
    kept.put(b"c", b'{"ok": true}', b"x" * 40)
    kept.put(b"d", b'{"ok": true}', b"x" * 40)  # over the total
    assert [k for k in (b"a", b"b", b"c", b"d") if kept.get(k) is not None] == [b"a", b"c"]
