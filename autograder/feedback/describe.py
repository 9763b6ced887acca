"""Shapes, dtypes, values and kinds of values, written the way every message writes them."""
from __future__ import annotations

import torch

from .redact import redact_dims, redact_text


def fmt_shape(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def fmt_dtype(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def fmt_values(t: torch.Tensor, limit: int = 8, places: int = 4) -> str:
    flat = t.detach().double().flatten().tolist()
    text = ", ".join(f"{v:.{places}f}" for v in flat[:limit])
    return "[" + text + (", ..." if len(flat) > limit else "") + "]"


def fmt_index(index: tuple) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def kind_of(value, public: bool = True, known: set = frozenset()) -> str:
    """What a value is, in a few words: "a tensor of shape [2, 3], dtype float32", "a tuple of 2", "None".

    ``{"$unsupported": name}`` is how a worker reports a value it could not send (a numpy array, a
    tensor subclass): it reads as the value itself would.
    """
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {redact_dims(list(value.shape), known, public)}, dtype {fmt_dtype(value)}"
    if isinstance(value, dict) and "$unsupported" in value:
        return f"a {redact_text(str(value['$unsupported']), public, 100)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"
