"""Torch's lazy initialisations, paid once in a process that forks workers, instead of in every worker.

Both zygotes call it before they fork: the separate interpreter of ``grade autograde`` (``zygote.py``) and
``grade check``'s own process (``sandbox/local_zygote.py``).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import wire


def warm_up() -> None:
    """Pay torch's lazy initialisations once, here, instead of in every forked worker.

    The first backward pass of a process alone costs noticeable time (autograd engine start-up); after a
    fork the children inherit the initialised state. Only public, generic operations run here.
    """
    import numpy.random  # noqa: F401, PLC0415 - imported once here, seeded at every step (hygiene.fresh_random_state)

    torch.manual_seed(0)
    x = torch.rand(2, 3, 4, requires_grad=True)
    layer = nn.Linear(4, 4)
    drop = nn.Dropout(0.5)
    scores = layer(x) @ x.transpose(1, 2)
    scores = scores.masked_fill(torch.triu(torch.ones(3, 3, dtype=torch.bool), 1), -torch.inf)
    weights = drop(torch.softmax(scores / 2**0.5, dim=-1))
    out = torch.einsum("bij,bjk->bk", weights, x) + F.scaled_dot_product_attention(x, x, x, is_causal=True).sum(1)
    (out * torch.ones_like(out)).sum().backward()  # as runtime.run does it
    q = torch.randn(4, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    q.var(unbiased=False).item()
    header = wire.pack({"w": weights.detach(), "n": (1, 2.0)})
    del header
