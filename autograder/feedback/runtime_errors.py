"""The likely cause of an error torch raised in the student's code, in the student's terms.

Torch's words stay as they are (``messages.raised`` says them); this adds the "likely:" line a beginner needs
beside them: the mask not sliced to the input's length, ``keys.T`` on a batch, ``.view`` after a transpose,
the two sides of an ``@`` that do not line up, float32 meeting float64, a sum without ``keepdim``, a layer
assigned before ``super().__init__()``. What it reads:

- the error's type and message (Python's or torch's words: a hidden count's numbers in them are read here,
  never shown);
- the case's own sizes: the module's arguments (``init_args``: d_in, d_out, context_length...) and the shape
  of the input ``x`` (``x_shape``: a module's [batch, num_tokens, d_in], or a function's first argument's);
- ``source_line``: the line of the student's own file the error was raised at, read from the file itself
  (by the trusted side from the staged copy; in a notebook, from the cell), to name what the student named
  (``keys.T``, ``context_vec.view``);
- the student's warnings of the same call (``warnings``: torch's ``x.T`` warning names the line).

Every hint is built from the catalogue's words and names taken from the student's own source line, so it is
the same on public and hidden counts.
"""
from __future__ import annotations

import re

from .catalogue import Likely, hint

_SIZES = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")
_MATMUL = ("shapes cannot be multiplied", "size mismatch, got input", "Expected batch2_sizes",
           "Expected size for first two dimensions of batch2", "inconsistent tensor size")
_DTYPES = ("same dtype", "expected scalar type")
_T_WARNING = "The use of `x.T` on tensors of dimension other than 2"


def _name_before(pattern: str, text: str | None) -> str | None:
    """The dotted name the student wrote before ``pattern`` on ``text`` (``keys`` in ``queries @ keys.T``)."""
    if not text:
        return None
    found = re.search(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)" + pattern, text)
    return found.group(1) if found else None


def _mask_expression(text: str | None) -> str:
    """What the student masks with on ``text`` (``self.mask.bool()`` in ``masked_fill(self.mask.bool(), ...)``)."""
    found = re.search(r"masked_fill_?\(\s*([^,]+?)\s*,", text or "")
    if found and "[" not in found.group(1):
        return found.group(1)
    return "self.mask.bool()"


def transposed_batch(warnings=(), source_line: str | None = None) -> Likely | None:
    """``keys.T`` on a batch: torch's own warning about the student's line names it."""
    for seen in warnings or ():
        if _T_WARNING in str(seen.get("message", "")):
            name = _name_before(r"\.T\b", seen.get("text")) or _name_before(r"\.T\b", source_line) or "x"
            return hint("batch-transposed-with-T", name=name)
    return None


def error_hints(error: dict, *, module: bool = False, init_args=(), x_shape=None, source_line: str | None = None,
                warnings=()) -> list[Likely]:
    """The likely cause of ``error`` (its ``type`` and ``message``), or none; ``module``: whether ``x_shape`` is a
    module's input, [batch, num_tokens, d_in]."""
    message = str(error.get("message") or "")
    kind = str(error.get("type") or "")
    x_shape = list(x_shape) if x_shape is not None else None
    sizes = _SIZES.search(message)
    shapes = bool(sizes) or any(words in message for words in _MATMUL)
    if shapes:  # a .T on a batch comes first: torch's own warning, or a .T on the line, names it
        transposed = transposed_batch(warnings, source_line)
        if transposed is None and x_shape and len(x_shape) >= 3 and _name_before(r"\.T\b", source_line):
            transposed = hint("batch-transposed-with-T", name=_name_before(r"\.T\b", source_line))
        if transposed is not None:
            return [transposed]
    if sizes and module and x_shape and len(x_shape) == 3:
        pair = {int(sizes[1]), int(sizes[2])}
        b, T = x_shape[0], x_shape[1]
        context = init_args[2] if len(init_args) > 2 and isinstance(init_args[2], int) else None
        if context is not None and T != context and pair == {T, context}:
            return [hint("mask-not-sliced", mask=_mask_expression(source_line))]
        if b != T and pair == {b, T}:
            return [hint("num-tokens-from-batch")]
    if sizes and source_line and ".sum(" in source_line and "keepdim" not in source_line:
        return [hint("sum-without-keepdim")]
    if "view size is not compatible with input tensor's size and stride" in message:
        return [hint("view-not-contiguous", name=_name_before(r"\s*\.view\(", source_line) or "the tensor")]
    if any(words in message for words in _MATMUL):
        layer = _name_before(r"\.weight\b", source_line)
        if layer and ".weight.T" not in (source_line or "") and "shapes cannot be multiplied" in message:
            return [hint("linear-weight-transposed", layer=layer)]
        return [hint("matmul-shapes")]
    if any(words in message for words in _DTYPES) and re.search(r"[Ff]loat|[Dd]ouble", message):
        return [hint("mixed-dtypes")]
    if kind == "AttributeError" and "before Module.__init__() call" in message:
        return [hint("assigned-before-super-init")]
    return []
