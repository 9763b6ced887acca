"""An answer's bytes, made with nothing the student's code can have replaced: the worker's way out.

From the moment the student's call returns until its answer is written, no code of the student's may run: code that
runs then can rewrite the answer and undo its own patch before the integrity check looks (integrity.py). The red
team did it three ways with ``wire.pack``, which looks its helpers up as it goes: a frame walk that rebound the
wire's own ``encode`` for one call, ``torch.Tensor.detach`` rebound, and an input given a ``__torch_function__``
class by ``__class__`` assignment; each hid an input the step modified in place.

So ``pack`` and its helpers look nothing up when they run. Each takes what it calls from its own defaults, fixed
when this module is imported (before any student code) and never replaced afterwards (the worker's audit hook
refuses a new ``__defaults__``, as it refuses a new ``__code__``: no_tracing.py): C-level callables of immutable
types (``torch._C.TensorBase``'s methods, numpy's ``ndarray.tobytes``, the ``_json`` encoder, ``struct.Struct``),
and tuples. Values are told apart by their exact type (``type(value) is str``), never by ``isinstance``, which asks
an object's own ``__class__``. ``runtime.run`` calls ``pack`` with the collector off and torch's Python hooks off:
no ``__torch_function__``, no ``__torch_dispatch__``, no mode of the student's, runs inside it.

The bytes are a frame as ``wire.pack`` makes one (a JSON header, a safetensors blob), for ``wire.unpack``.
"""
from __future__ import annotations

import json.encoder
import math
import struct

import numpy
import torch

_Base = torch._C.TensorBase

#: (dtype, its name in a safetensors header, what to view it as for numpy) for each dtype that may cross
_CODES = ((torch.float32, "F32", None), (torch.float64, "F64", None), (torch.int64, "I64", None),
          (torch.bool, "BOOL", None), (torch.float16, "F16", None), (torch.bfloat16, "BF16", torch.int16),
          (torch.int32, "I32", None), (torch.int16, "I16", None), (torch.int8, "I8", None), (torch.uint8, "U8", None))


def _unsendable(value, _TypeError=TypeError):
    """The JSON encoder's ``default``: never reached, since ``_walk`` hands it plain JSON values only."""
    raise _TypeError("cannot send this value over the wire")


#: ``json.dumps``'s output (", " and ": ", ASCII, no NaN), from the C encoder itself
_JSON = json.encoder.c_make_encoder(None, _unsendable, json.encoder.c_encode_basestring_ascii, None, ": ", ", ",
                                    False, False, False)


def _tensor(value, tensors: list, _keys=torch._C._dispatch_keys, _has=torch._C.DispatchKeySet.has,
            _python=torch._C.DispatchKey.Python, _detach=_Base.detach, _to=_Base.to, _contiguous=_Base.contiguous,
            _resolve_conj=_Base.resolve_conj, _resolve_neg=_Base.resolve_neg, _dtype=_Base.__dict__["dtype"].__get__,
            _shape=_Base.__dict__["shape"].__get__, _numpy=_Base.numpy, _view=_Base.view,
            _tobytes=numpy.ndarray.tobytes, _codes=_CODES, _list=list, _len=len, _str=str, _append=list.append,
            _TypeError=TypeError) -> str:
    """A tensor's bytes, added to ``tensors`` as (key, dtype name, shape, bytes); its key."""
    if _has(_keys(value), _python):  # its every operation would call Python: a __torch_dispatch__ tensor
        raise _TypeError("cannot send a tensor whose operations dispatch to Python (a __torch_dispatch__ subclass)")
    plain = _contiguous(_resolve_neg(_resolve_conj(_to(_detach(value), "cpu"))))
    dtype = _dtype(plain)
    for known, name, view in _codes:
        if known is dtype:
            key = _str(_len(tensors))
            _append(tensors, (key, name, _list(_shape(plain)), _tobytes(_numpy(plain if view is None else _view(plain, view)))))
            return key
    raise _TypeError("cannot send a tensor of dtype " + _str(dtype))


def _walk(value, tensors: list, again, _tensor=_tensor, _type=type, _issubclass=issubclass, _Base=_Base, _str=str,
          _int=int, _float=float, _bool=bool, _tuple=tuple, _list=list, _dict=dict, _items=dict.items,
          _finite=math.isfinite, _repr=float.__repr__, _as_str=str.__str__, _as_int=int.__int__,
          _as_float=float.__float__, _name=type.__dict__["__name__"].__get__, _TypeError=TypeError):
    """``value`` as JSON values, its tensors moved into ``tensors`` (``{"$t": key}``); a tuple is ``{"$tuple": [...]}``,
    a non-finite float ``{"$f": "nan" | "inf" | "-inf"}`` (``wire.encode``'s format). ``again`` is this function: it
    calls itself through its argument, not by its name in this module."""
    kind = _type(value)
    if kind is _str or kind is _int or kind is _bool or value is None:
        return value
    if kind is _float:
        return value if _finite(value) else {"$f": _repr(value)}
    if kind is _dict:
        return {(k if _type(k) is _str else _as_str(k)): again(v, tensors, again) for k, v in _items(value)}
    if kind is _list:
        return [again(v, tensors, again) for v in value]
    if kind is _tuple:
        return {"$tuple": [again(v, tensors, again) for v in value]}
    if _issubclass(kind, _Base):
        return {"$t": _tensor(value, tensors)}
    # a subclass of str, int or float: its value, read by the base type's own C slot (none of the subclass's methods)
    if _issubclass(kind, _str):
        return _as_str(value)
    if _issubclass(kind, _int):
        return _as_int(value)
    if _issubclass(kind, _float):
        return again(_as_float(value), tensors, again)
    raise _TypeError("cannot send a " + _name(kind) + " over the wire")


def _blob(tensors: list, _json=_JSON, _join="".join, _utf8=str.encode, _le64=struct.Struct("<Q").pack, _len=len,
          _bytes_join=b"".join) -> bytes:
    """The safetensors bytes of ``tensors``: an 8-byte little-endian length, the JSON header padded to 8 bytes, the
    data, in order."""
    header, at = {}, 0
    for key, name, shape, data in tensors:
        end = at + _len(data)
        header[key] = {"dtype": name, "shape": shape, "data_offsets": [at, end]}
        at = end
    text = _utf8(_join(_json(header, 0)))
    text += b" " * (-_len(text) % 8)
    return _le64(_len(text)) + text + _bytes_join([data for _, _, _, data in tensors])


def pack(message, _walk=_walk, _blob=_blob, _json=_JSON, _join="".join, _utf8=str.encode,
         _be32=struct.Struct(">I").pack, _be64=struct.Struct(">Q").pack, _len=len) -> bytes:
    """``message`` as a frame: ``len(header)`` (4 bytes, big-endian), the JSON header, ``len(blob)`` (8 bytes), the
    safetensors blob (``wire.py``)."""
    tensors: list = []
    header = _utf8(_join(_json(_walk(message, tensors, _walk), 0)))
    blob = _blob(tensors) if tensors else b""
    return _be32(_len(header)) + header + _be64(_len(blob)) + blob
