"""The course documents' input tensors and seeds: the ground truth every check is anchored to.

These are public: students see them in the course documents. Each factory returns a fresh tensor.
"""
from __future__ import annotations

import torch

# Book input, "Your journey starts with one step" (documents 001, 002, 003).
_BOOK = [
    [0.43, 0.15, 0.89],  # Your     (x^1)
    [0.55, 0.87, 0.66],  # journey  (x^2)
    [0.57, 0.85, 0.64],  # starts   (x^3)
    [0.22, 0.58, 0.33],  # with     (x^4)
    [0.77, 0.25, 0.10],  # one      (x^5)
    [0.05, 0.80, 0.55],  # step     (x^6)
]
# Document 000, "wars not make one great": the book's first four rows, a different last row, 5 tokens.
_WARS = [
    [0.43, 0.15, 0.89],  # wars
    [0.55, 0.87, 0.66],  # not
    [0.57, 0.85, 0.64],  # make
    [0.22, 0.58, 0.33],  # one
    [0.02, 0.81, 0.52],  # great
]
# Document 004, "production-ready" notebook: another 6x3 input, used with torch.manual_seed(100).
_DOC004 = [
    [0.8938, 0.9003, 0.8978],  # Your
    [0.7165, 0.3428, 0.2553],  # journey
    [0.1042, 0.5163, 0.3753],  # starts
    [0.0445, 0.3091, 0.9763],  # with
    [0.1554, 0.1614, 0.2700],  # one
    [0.8089, 0.9435, 0.5480],  # step
]


def book_inputs() -> torch.Tensor:
    return torch.tensor(_BOOK)


def wars_inputs() -> torch.Tensor:
    return torch.tensor(_WARS)


def doc004_inputs() -> torch.Tensor:
    return torch.tensor(_DOC004)


#: name -> (factory, seed used with it for the trainable weights, where it comes from)
INPUTS = {
    "book": (book_inputs, 123, "documents 001-003, 'Your journey starts with one step'"),
    "wars": (wars_inputs, 123, "document 000, 'wars not make one great'"),
    "doc004": (doc004_inputs, 100, "document 004, the production-ready notebook"),
}

#: The seed the book uses for SelfAttention_v2 (document 001).
SEED_V2 = 789
#: The query token the documents use: the second input, x^(2) ("journey").
QUERY_INDEX = 1
#: The documents' output dimension for trainable weights.
D_OUT = 2
