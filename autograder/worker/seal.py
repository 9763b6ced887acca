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
an object's own ``__class__``. Tensors are read without a single operator of torch's dispatcher (``raw``), where a
Python kernel of the student's could sit (``torch.library``: a second review found it, with a weakref's callback run
as the grader let go of an input, and a runtime global rebound for one lookup). ``runtime.run`` calls ``pack`` with
the collector off and torch's Python hooks off (no ``__torch_function__``, no ``__torch_dispatch__``, no mode of the
student's runs inside it), in the frame that still holds the student's objects.

The bytes are a frame as ``wire.pack`` makes one (a JSON header, a safetensors blob), for ``wire.unpack``.
"""
from __future__ import annotations

import json.encoder
import math
import struct

import numpy
import torch

_Base = torch._C.TensorBase

#: (dtype, its name in a safetensors header) for each dtype that may cross (numpy reads them all; not bfloat16)
_CODES = ((torch.float32, "F32"), (torch.float64, "F64"), (torch.int64, "I64"), (torch.bool, "BOOL"),
          (torch.float16, "F16"), (torch.int32, "I32"), (torch.int16, "I16"), (torch.int8, "I8"), (torch.uint8, "U8"))

#: the first item of a tensor read as bytes (``raw``), which ``pack`` sends as that tensor
RAW = object()


def _unsendable(value, _TypeError=TypeError):
    """The JSON encoder's ``default``: never reached, since ``_walk`` hands it plain JSON values only."""
    raise _TypeError("cannot send this value over the wire")


#: ``json.dumps``'s output (", " and ": ", ASCII, no NaN), from the C encoder itself
_JSON = json.encoder.c_make_encoder(None, _unsendable, json.encoder.c_encode_basestring_ascii, None, ": ", ", ",
                                    False, False, False)


def raw(value, keep: list, _keys=torch._C._dispatch_keys, _has=torch._C.DispatchKeySet.has, _python=torch._C.DispatchKey.Python,
        _data=_Base.__dict__["data"].__get__, _dtype=_Base.__dict__["dtype"].__get__,
        _shape=_Base.__dict__["shape"].__get__, _device=_Base.__dict__["device"].__get__,
        _device_type=torch.device.__dict__["type"].__get__, _numpy=_Base.numpy, _tobytes=numpy.ndarray.tobytes,
        _codes=_CODES, _tuple=tuple, _str=str, _append=list.append, _RAW=RAW, _TypeError=TypeError) -> tuple:
    """``value``'s bytes as they are now: ``(RAW, dtype name, shape, bytes)``, an exact tuple, which nothing can
    change. Read without a single operator of torch's dispatcher, where a Python kernel of the student's could sit
    (``torch.library``): ``.data`` (the same storage, cut from the graph), numpy's view of it, numpy's copy of its
    bytes, in C order. A tensor numpy cannot view (meta, sparse, a negative or conjugate bit, bfloat16) is refused.
    What it makes is added to ``keep``, for the caller to let go of once the bytes are made: freed here, a
    ``torch.Tensor`` would run a ``__del__`` that student code can give that class (a third review found it)."""
    if _has(_keys(value), _python):  # its every operation would call Python: a __torch_dispatch__ tensor
        raise _TypeError("cannot send a tensor whose operations dispatch to Python (a __torch_dispatch__ subclass)")
    plain = _data(value)
    _append(keep, plain)
    where = _device_type(_device(plain))
    if where != "cpu":
        raise _TypeError("a tensor on the " + where + " device holds no values the grader can read (a meta tensor has "
                         "only a shape and a dtype): return a CPU tensor")
    dtype = _dtype(plain)
    for known, name in _codes:
        if known is dtype:
            array = _numpy(plain)
            _append(keep, array)
            return (_RAW, name, _tuple(_shape(plain)), _tobytes(array))
    raise _TypeError("cannot send a tensor of dtype " + _str(dtype) + " (the grader reads float16, float32, float64, "
                     "integers and bool)")


def _walk(value, tensors: list, keep: list, again, _raw=raw, _RAW=RAW, _type=type, _issubclass=issubclass, _Base=_Base,
          _str=str, _int=int, _float=float, _bool=bool, _tuple=tuple, _list=list, _dict=dict, _bytes=bytes,
          _items=dict.items,
          _len=len, _append=list.append, _finite=math.isfinite, _repr=float.__repr__, _as_str=str.__str__,
          _as_int=int.__int__, _as_float=float.__float__, _name=type.__dict__["__name__"].__get__,
          _TypeError=TypeError):
    """``value`` as JSON values, its tensors moved into ``tensors`` (``{"$t": key}``); a tuple is ``{"$tuple": [...]}``,
    a non-finite float ``{"$f": "nan" | "inf" | "-inf"}`` (``wire.encode``'s format). ``again`` is this function: it
    calls itself through its argument, not by its name in this module."""
    kind = _type(value)
    if kind is _str or kind is _int or kind is _bool or value is None:
        return value
    if kind is _float:
        return value if _finite(value) else {"$f": _repr(value)}
    if kind is _dict:
        return {(k if _type(k) is _str else _as_str(k)): again(v, tensors, keep, again) for k, v in _items(value)}
    if kind is _list:
        return [again(v, tensors, keep, again) for v in value]
    if kind is _tuple and not (_len(value) == 4 and value[0] is _RAW):
        return {"$tuple": [again(v, tensors, keep, again) for v in value]}
    if kind is _tuple or _issubclass(kind, _Base):  # a tensor, or one already read as bytes (``raw``)
        _, name, shape, data = value if kind is _tuple else _raw(value, keep)
        # ``RAW`` is no secret (these defaults can be read): a tuple marked so is taken for one ``raw`` made only if
        # every part of it is of the exact type ``raw`` gives, which nothing but C reads (a fourth review planted one
        # whose shape's __iter__ ran in the walk)
        if _type(name) is not _str or _type(shape) is not _tuple or _type(data) is not _bytes:
            raise _TypeError("cannot send a forged tensor over the wire")
        for size in shape:
            if _type(size) is not _int:
                raise _TypeError("cannot send a forged tensor over the wire")
        key = _str(_len(tensors))
        _append(tensors, (key, name, _list(shape), data))
        return {"$t": key}
    # a subclass of str, int or float: its value, read by the base type's own C slot (none of the subclass's methods)
    if _issubclass(kind, _str):
        return _as_str(value)
    if _issubclass(kind, _int):
        return _as_int(value)
    if _issubclass(kind, _float):
        return again(_as_float(value), tensors, keep, again)
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
    keep: list = []  # what the walk made, let go of once the bytes are made (``raw``)
    header = _utf8(_join(_json(_walk(message, tensors, keep, _walk), 0)))
    blob = _blob(tensors) if tensors else b""
    frame = _be32(_len(header)) + header + _be64(_len(blob)) + blob
    return frame
