"""A stand-in module built again from the same seed is GPT-2's 2.4M parameters copied, not drawn again.

The student's worker draws a stand-in's parameters itself, as the reference drew them (``standins._draw``).
A test builds ``gpt2_small_attention()`` from one seed in each of its cases; the second build copies the
first one's values and sets the random state to where those draws ended. What a student's code sees must
be what drawing again gives: the same values (its own copy), the same random state after.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from autograder.worker import reference_server, standins
from solutions import multihead_attention

STEP = "multihead_attention.MultiHeadAttention"
GPT2 = (768, 768, 1024, 0.0, 12, False)


@pytest.fixture
def proxy():
    server = reference_server.Server({STEP: multihead_attention.MultiHeadAttention})

    def call(message: dict) -> dict:  # the reference worker is another process, with a random state of its own
        ours = torch.get_rng_state()
        try:
            return server.answer(message)
        finally:
            torch.set_rng_state(ours)
    return standins.build({STEP: "class"}, call)[STEP]


@pytest.fixture
def draws(monkeypatch):
    """How many linear layers drew their parameters."""
    count = [0]
    original = nn.Linear.reset_parameters

    def counted(self):
        count[0] += 1
        original(self)
    monkeypatch.setattr(nn.Linear, "reset_parameters", counted)
    return count


def built(cls, seed: int):
    torch.manual_seed(seed)
    module = cls(*GPT2)
    return module, torch.get_rng_state(), torch.rand(3)  # the next draw a student's code makes


def test_built_again_from_the_same_seed_it_is_what_drawing_again_gives(proxy, draws):
    reference, reference_after, reference_next = built(multihead_attention.MultiHeadAttention, 123)
    first, first_after, first_next = built(proxy, 123)  # drawn (and built by the reference worker)
    draws[0] = 0
    second, second_after, second_next = built(proxy, 123)
    assert draws[0] == 0  # copied
    for module, after, following in ((first, first_after, first_next), (second, second_after, second_next)):
        assert [n for n, _ in module.named_parameters()] == [n for n, _ in reference.named_parameters()]
        assert all(torch.equal(a, b) for a, b in zip(module.parameters(), reference.parameters()))
        assert torch.equal(after, reference_after) and torch.equal(following, reference_next)
        assert all(p.requires_grad for p in module.parameters())
    with torch.no_grad():  # its own copy: a change to one module is not seen by the next
        second.W_query.weight.zero_()
    third, _, _ = built(proxy, 123)
    assert torch.equal(third.W_query.weight, reference.W_query.weight)


def test_the_control_another_seed_is_drawn_and_differs(proxy, draws):
    built(proxy, 123)
    draws[0] = 0
    other, other_after, _ = built(proxy, 124)
    assert draws[0] > 0  # the counter above can see draws
    reference, reference_after, _ = built(multihead_attention.MultiHeadAttention, 124)
    assert torch.equal(other.W_key.weight, reference.W_key.weight) and torch.equal(other_after, reference_after)
    assert not torch.equal(other.W_key.weight, built(multihead_attention.MultiHeadAttention, 123)[0].W_key.weight)
