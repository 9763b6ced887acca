"""Write values (tensors, numbers, tuples) as Python source for a notebook's test cells.

Small tensors are written out, so that a student reads the case: ``T([[0.43, 0.15], [0.55, 0.87]])``
(float32 values in their shortest exact form, so they read back bit for bit). Longer ones travel as
their raw bytes, base64-encoded: ``B("float32", [1, 4, 768], "...")``. Tensors too large for a
notebook (GPT-2's 2.4M weights) become a ``Digest``: shape, dtype, sums and a sample of entries. The
names ``T``, ``B``, ``Digest``, ``Gen`` and ``Holder`` are defined by the checking helper
(``checks.py``), which every notebook holds.
"""
from __future__ import annotations

import base64
import math

import numpy as np
import torch

#: at most this many entries are written out as numbers
WRITE_OUT = 64
#: beyond this many entries a tensor is summarized by a digest
DIGEST_OVER = 50_000
#: a digest checks this many entries one by one
DIGEST_SAMPLE = 64
#: base64 text is split into lines of this length
LINE = 96


def number(value: float, dtype: torch.dtype = torch.float64) -> str:
    """The shortest text that reads back as exactly ``value`` in ``dtype``."""
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else '-float("inf")'
    if dtype == torch.float32:
        text = str(np.float32(value))
    elif dtype == torch.float16:
        text = str(np.float16(value))
    else:
        text = repr(float(value))
    return text


def nested(t: torch.Tensor) -> str:
    """A tensor's entries as nested Python lists, e.g. ``[[0.43, 0.15], [0.55, 0.87]]``."""
    return _nested(t.detach().tolist(), t.dtype)


def _nested(values, dtype: torch.dtype) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v, dtype) for v in values) + "]"
    if isinstance(values, bool):
        return repr(values)
    if dtype.is_floating_point:
        return number(values, dtype)
    return str(int(values))


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _blob(t: torch.Tensor) -> str:
    # native byte order, as torch.frombuffer reads it back: little-endian on every machine torch supports
    data = base64.b64encode(t.detach().contiguous().cpu().numpy().tobytes()).decode()
    chunks = [data[i:i + LINE] for i in range(0, len(data), LINE)] or [""]
    body = "\n    ".join(f'"{c}"' for c in chunks)
    return f'B("{_dtype_name(t.dtype)}", {list(t.shape)}, (\n    {body}))'


def digest(t: torch.Tensor) -> str:
    flat = t.detach().double().flatten()
    n = flat.numel()
    step = max(1, n // DIGEST_SAMPLE)
    sample = [(i, float(flat[i])) for i in range(0, n, step)][:DIGEST_SAMPLE]
    sample_text = ", ".join(f"({i}, {number(v)})" for i, v in sample)
    return (f'Digest({list(t.shape)}, "{_dtype_name(t.dtype)}", total={number(flat.sum().item())}, '
            f'squares={number((flat * flat).sum().item())},\n    sample=[{sample_text}])')


def tensor(t: torch.Tensor) -> str:
    t = t.detach()
    if type(t) is not torch.Tensor:
        t = t.data if isinstance(t, torch.nn.Parameter) else torch.Tensor._make_subclass(torch.Tensor, t)
    if t.numel() > DIGEST_OVER:
        return digest(t)
    if t.numel() > WRITE_OUT or 0 in t.shape or t.dtype not in (torch.float32, torch.float64, torch.int64, torch.bool):
        return _blob(t)
    text = nested(t)
    return f"T({text})" if t.dtype == torch.float32 else f'T({text}, "{_dtype_name(t.dtype)}")'


def value(v) -> str:
    """Any value a case holds: tensors, numbers, strings, None, tuples, lists, dicts."""
    if isinstance(v, torch.Tensor):
        return tensor(v)
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return number(v)
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, tuple):
        inner = ", ".join(value(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{value(k)}: {value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write a {type(v).__name__} into a notebook")


def named(pairs) -> str:
    """(name, tensor) pairs, one per line: parameters and their gradients."""
    if not pairs:
        return "[]"
    return "[\n" + "".join(f"    ({name!r}, {value(t)}),\n" for name, t in pairs) + "]"
