"""What hidden suites import: the ``@step`` marker and seeded random inputs."""
from __future__ import annotations

import torch


def step(step_id: str):
    """Mark a test class as grading ``step_id``; its methods ``test_<count>`` are the counts."""

    def mark(cls):
        cls.step = step_id
        return cls

    return mark


def rand(*shape: int, seed: int, dtype: torch.dtype = torch.float32, low: float = 0.0,
         high: float = 1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low).to(dtype)


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
