"""Write values (tensors, numbers, tuples) as Python source for a notebook's test cells.

Small tensors are written out, so that a student reads the case: ``T([[0.43, 0.15], [0.55, 0.87]])``
(float32 values in their shortest exact form, so they read back bit for bit). Simple ones are written
as the expression that makes them, whatever their size: ``torch.ones([100, 100])``, ``torch.full([2, 3],
-inf)``, ``torch.arange(12).reshape([3, 4])``, ``torch.eye(5)``. The other long tensors of the cases in
the open go into one file beside the notebooks (``DataFile``: a dict of tensors saved by ``torch.save``,
which nbgrader copies into release/ and autograded/), read by ``D("key")``. Those of hidden cases must
not reach students, so they stay in the hidden cells (which ``nbgrader generate_assignment`` removes),
as their raw bytes, base64-encoded: ``B("float32", [1, 4, 768], "...")``. Tensors too large for a
notebook (GPT-2's 2.4M weights) become a ``Digest``: shape, dtype, sums and a sample of entries. The
names ``T``, ``D``, ``B``, ``Digest``, ``Gen`` and ``Holder`` are defined by the checking helper
(``cell_runner.py``, in ``checking_helper.py`` beside the notebooks), which every notebook imports.
"""
from __future__ import annotations

import base64
import hashlib
import math
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

#: at most this many entries are written out as numbers
WRITE_OUT = 64
#: a tensor of more entries than this is written as an expression when it is a simple one (ones, arange, ...)
EXPRESSION_OVER = 8
#: the dtypes a tensor is written out in (as numbers) when it is short
WRITTEN_DTYPES = (torch.float32, torch.float64, torch.int64, torch.bool)
#: beyond this many entries a tensor is summarized by a digest
DIGEST_OVER = 50_000
#: a digest checks this many entries one by one
DIGEST_SAMPLE = 64
#: base64 text is split into lines of this length
LINE = 96


class DataFile:
    """The long tensors of the cases in the open, by a key made of their dtype, shape and content."""

    def __init__(self, name: str):
        self.name = name
        self.tensors: dict[str, torch.Tensor] = {}

    def add(self, t: torch.Tensor) -> str:
        t = t.detach().contiguous().cpu()
        digest_ = hashlib.sha256(f"{t.dtype}{list(t.shape)}".encode() + t.numpy().tobytes()).hexdigest()[:12]
        key = f"{_dtype_name(t.dtype)}{list(t.shape)}:{digest_}".replace(" ", "")
        self.tensors.setdefault(key, t.clone())
        return key

    def save(self, folder: Path) -> Path | None:
        """Write the file into ``folder`` (nothing when no tensor needs it); its path."""
        if not self.tensors:
            return None
        path = Path(folder) / self.name
        torch.save(dict(sorted(self.tensors.items())), path)
        return path


_STORE: list = [None]


@contextmanager
def storing(data: DataFile | None):
    """Within this block, long tensors go to ``data`` (None: written into the cell, for hidden cases)."""
    before = _STORE[0]
    _STORE[0] = data
    try:
        yield
    finally:
        _STORE[0] = before


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


def _dtype_arg(dtype: torch.dtype) -> str:
    return "" if dtype == torch.float32 else f", dtype=torch.{_dtype_name(dtype)}"


def expression(t: torch.Tensor) -> str | None:
    """The torch expression that makes ``t`` when there is a simple one: ones, zeros, full, arange, eye."""
    shape, dt = list(t.shape), _dtype_arg(t.dtype)
    if t.numel() == 0:
        return f"torch.empty({shape}{dt})"
    if t.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64,
                       torch.bool):
        return None
    flat = t.reshape(-1)
    first = flat[0]
    if bool((flat == first).all()) or (t.dtype.is_floating_point and bool(torch.isnan(flat).all())):
        v = first.item()
        if t.dtype == torch.bool:
            return f"torch.{'ones' if v else 'zeros'}({shape}{dt})"
        if v == 0 and not (t.dtype.is_floating_point and math.copysign(1.0, v) < 0):
            return f"torch.zeros({shape}{dt})"
        if v == 1:
            return f"torch.ones({shape}{dt})"
        text = number(v, t.dtype) if t.dtype.is_floating_point else str(int(v))
        return f"torch.full({shape}, {text}{dt})"
    if t.dtype != torch.bool and torch.equal(flat, torch.arange(flat.numel(), dtype=t.dtype)):
        made = f"torch.arange({flat.numel()}{dt})"
        return made if len(shape) == 1 else f"{made}.reshape({shape})"
    if t.dim() == 2 and shape[0] == shape[1] and torch.equal(t, torch.eye(shape[0], dtype=t.dtype)):
        return f"torch.eye({shape[0]}{dt})"
    return None


def tensor(t: torch.Tensor) -> str:
    t = t.detach()
    if type(t) is not torch.Tensor:
        t = t.data if isinstance(t, torch.nn.Parameter) else torch.Tensor._make_subclass(torch.Tensor, t)
    t = t.cpu()
    written_out = t.numel() <= WRITE_OUT and 0 not in t.shape and t.dtype in WRITTEN_DTYPES
    if not written_out or t.numel() > EXPRESSION_OVER:
        made = expression(t)
        if made is not None:
            return made
    if t.numel() > DIGEST_OVER:
        return digest(t)
    if not written_out:
        if _STORE[0] is not None:
            return f'D("{_STORE[0].add(t)}")'
        return _blob(t)
    text = nested(t)
    return f"T({text})" if t.dtype == torch.float32 else f'T({text}, "{_dtype_name(t.dtype)}")'


def kept_aside(t: torch.Tensor) -> str:
    """A tensor no student reads (a likely mistake's values): in the data file when one is in use, else as
    ``tensor``."""
    if _STORE[0] is not None and t.numel() > EXPRESSION_OVER and t.dtype in WRITTEN_DTYPES:
        plain = torch.Tensor._make_subclass(torch.Tensor, t.detach()) if type(t) is not torch.Tensor else t
        return f'D("{_STORE[0].add(plain)}")'
    return tensor(t)


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


def named(pairs, aside: bool = False) -> str:
    """(name, tensor) pairs, one per line: parameters and their gradients; ``aside``: tensors no student reads (the
    reference's weights loaded into theirs), in the data file where one is in use (``kept_aside``)."""
    if not pairs:
        return "[]"
    write = kept_aside if aside else value
    return "[\n" + "".join(f"    ({name!r}, {write(t)}),\n" for name, t in pairs) + "]"
