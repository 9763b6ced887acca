"""Frames between the trusted side and the worker: a JSON header plus a safetensors blob.

Nothing is pickled in either direction. Tensors travel in the blob (safetensors: a JSON header and raw
bytes), everything else is JSON. Inside the JSON a tensor is ``{"$t": key}``; a tuple is
``{"$tuple": [...]}``; a non-finite float is ``{"$f": "nan" | "inf" | "-inf"}``.

A frame is ``len(header) (4 bytes, big-endian) | header | len(blob) (8 bytes) | blob``.
"""
from __future__ import annotations

import json
import math
import os
import socket
import struct
import time

import safetensors
import torch

#: the dtypes that may cross, by safetensors' names (what ``deserialize`` reports)
_DTYPES = {"F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32, "F64": torch.float64,
           "I8": torch.int8, "I16": torch.int16, "I32": torch.int32, "I64": torch.int64, "U8": torch.uint8,
           "BOOL": torch.bool}
_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64",
          torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8",
          torch.bool: "bool"}


def _st_save(tensors: dict[str, torch.Tensor]) -> bytes:
    """safetensors bytes, through its raw API (``safetensors.torch.save`` costs 15x more per small frame)."""
    for key, t in tensors.items():
        if t.dtype not in _NAMES:
            raise TypeError(f"cannot send a tensor of dtype {t.dtype}")
    specs = {k: safetensors.TensorSpec(dtype=_NAMES[t.dtype], shape=list(t.shape), data_ptr=t.data_ptr(),
                                       data_len=t.numel() * t.element_size()) for k, t in tensors.items()}
    return safetensors.serialize(specs)  # ``tensors`` (contiguous copies) stay alive meanwhile


def _st_load(blob: bytes) -> dict[str, torch.Tensor]:
    out = {}
    for name, info in safetensors.deserialize(blob):
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"tensor {name!r} has dtype {info['dtype']}, which is not accepted")
        data = info["data"]
        out[name] = (torch.frombuffer(bytearray(data), dtype=dtype).reshape(info["shape"]) if len(data)
                     else torch.empty(info["shape"], dtype=dtype))
    return out

#: A worker's first frame, sent once it is confined and before it imports the submission (``child.serve``): a
#: worker that ends before it failed in the grader's own start (``grading/runner.py``).
STARTED = {"started": True}

#: The largest frame either side accepts; a bigger one is a protocol error (a worker flooding memory).
MAX_FRAME = 256 * 1024 * 1024
#: The largest JSON header: the tensors travel in the blob, so a header is names, shapes and small numbers.
#: Parsing JSON costs some 24 bytes of memory per byte: this bounds what a header costs the trusted side.
MAX_HEADER = 4 * 1024 * 1024


class WireError(Exception):
    """A malformed, oversized or truncated frame, or a closed connection."""


def encode(value, tensors: dict[str, torch.Tensor]):
    """Turn ``value`` into JSON-able data, moving tensors into ``tensors``."""
    if isinstance(value, torch.Tensor):
        key = str(len(tensors))
        # A plain, contiguous, detached CPU copy: safetensors refuses shared or strided storage, and
        # a subclass (with its own __torch_function__) must not travel as anything but data.
        plain = (torch.Tensor._make_subclass(torch.Tensor, value.detach()) if type(value) is not torch.Tensor
                 else value.detach())
        tensors[key] = plain.to("cpu").clone().contiguous()
        return {"$t": key}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$f": repr(value)}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, tensors) for v in value]}
    if isinstance(value, list):
        return [encode(v, tensors) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v, tensors) for k, v in value.items()}
    raise TypeError(f"cannot send a {type(value).__name__} over the wire")


def decode(data, tensors: dict[str, torch.Tensor]):
    """Inverse of :func:`encode`, on data already parsed."""
    if isinstance(data, list):
        return [decode(v, tensors) for v in data]
    if isinstance(data, dict):
        if len(data) == 1 and ("$tuple" in data or "$t" in data or "$f" in data):
            return _marker({k: decode(v, tensors) if k == "$tuple" else v for k, v in data.items()}, tensors)
        return {k: decode(v, tensors) for k, v in data.items()}
    return data


def _marker(data: dict, tensors: dict[str, torch.Tensor]):
    """A JSON object as :func:`encode` wrote it: a tensor, a tuple or a non-finite float, or a dict."""
    if len(data) == 1:
        if "$t" in data:
            return tensors[data["$t"]]
        if "$tuple" in data:
            return tuple(data["$tuple"])
        if "$f" in data:
            return float(data["$f"])
    return data


def _loads(header: bytes, tensors: dict[str, torch.Tensor]):
    """A header parsed and decoded in one pass (each object turned back as it is parsed, innermost first)."""
    return json.loads(header.decode("utf-8"), object_hook=lambda data: _marker(data, tensors))


def pack(message) -> bytes:
    tensors: dict[str, torch.Tensor] = {}
    header = json.dumps(encode(message, tensors), allow_nan=False).encode("utf-8")
    blob = _st_save(tensors) if tensors else b""
    return struct.pack(">I", len(header)) + header + struct.pack(">Q", len(blob)) + blob


def parse(header: bytes):
    """A frame's header as data (its tensors still in the blob)."""
    try:
        return json.loads(header.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise WireError(f"malformed frame: {type(exc).__name__}") from None


def unpack(header: bytes, blob: bytes):
    """A frame's value."""
    try:
        tensors = _st_load(blob) if blob else {}
        return _loads(header, tensors)  # parsed again with the tensors at hand: faster than a walk of ``parsed``
    except (ValueError, KeyError, UnicodeDecodeError, TypeError, RecursionError) as exc:
        raise WireError(f"malformed frame: {type(exc).__name__}: {str(exc)[:200]}") from None
    except MemoryError:  # not the frame's fault: the receiver's memory limit (child.py names it)
        raise
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error type for a corrupt blob
        raise WireError(f"malformed frame: {type(exc).__name__}: {exc}") from None


def send(sock: socket.socket, message) -> None:
    sock.sendall(pack(message))


def _recv_exact(sock: socket.socket, n: int, deadline: float | None, fds: list[int] | None = None) -> bytes:
    """``n`` bytes; with ``fds``, the descriptors that came with them are added to it (a worker's only)."""
    chunks = []
    while n:
        if deadline is not None:  # one clock for the whole frame: a byte that arrives restarts nothing
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("deadline passed")
            sock.settimeout(left)
        if fds is None:
            chunk = sock.recv(min(n, 1 << 20))
        else:
            chunk, got, _flags, _address = socket.recv_fds(sock, min(n, 1 << 20), MAX_FDS)
            fds.extend(got)
        if not chunk:
            raise WireError("connection closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def frame(header: bytes, blob: bytes) -> bytes:
    """A frame from its two parts, as ``recv_frame`` returns them (relayed without decoding the tensors)."""
    return struct.pack(">I", len(header)) + header + struct.pack(">Q", len(blob)) + blob


def recv_frame(sock: socket.socket, deadline: float | None = None) -> tuple[bytes, bytes]:
    """The next frame's header and blob, undecoded. With ``deadline`` (a ``time.monotonic()`` instant),
    ``TimeoutError`` once it has passed, however the bytes arrive: every read of every part of the frame
    shares that one deadline."""
    (hlen,) = struct.unpack(">I", _recv_exact(sock, 4, deadline))
    if hlen > MAX_HEADER:
        raise WireError(f"frame header of {hlen} bytes is over the limit")
    header = _recv_exact(sock, hlen, deadline)
    (blen,) = struct.unpack(">Q", _recv_exact(sock, 8, deadline))
    if blen > MAX_FRAME:
        raise WireError(f"frame of {blen} bytes is over the limit")
    return header, _recv_exact(sock, blen, deadline)


#: the most descriptors a frame may come with (a call's argument buffer: one)
MAX_FDS = 1


def recv_frame_and_fds(sock: socket.socket) -> tuple[bytes, bytes, list[int]]:
    """The next frame's header and blob, undecoded, and the descriptors handed over with it (``send_with_fd``):
    a worker reads its requests so. The trusted side never reads descriptors: a worker's are closed unread. Where none
    can be handed over (a loopback TCP channel: a worker spawned on Windows), none is read."""
    fds: list[int] = []
    carried = fds if sock.family == getattr(socket, "AF_UNIX", None) and hasattr(socket, "recv_fds") else None
    try:
        (hlen,) = struct.unpack(">I", _recv_exact(sock, 4, None, carried))
        if hlen > MAX_HEADER:
            raise WireError(f"frame header of {hlen} bytes is over the limit")
        header = _recv_exact(sock, hlen, None, carried)
        (blen,) = struct.unpack(">Q", _recv_exact(sock, 8, None, carried))
        if blen > MAX_FRAME:
            raise WireError(f"frame of {blen} bytes is over the limit")
        return header, _recv_exact(sock, blen, None, carried), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def send_with_fd(sock: socket.socket, frame: bytes, fd: int | None) -> None:
    """Send ``frame``, with ``fd`` handed over on its first byte (``SCM_RIGHTS``) when one is given."""
    if fd is None:
        sock.sendall(frame)
        return
    sent = socket.send_fds(sock, [frame], [fd])
    if sent < len(frame):
        sock.sendall(frame[sent:])


def recv(sock: socket.socket, deadline: float | None = None):
    """The next frame, decoded (``recv_frame`` for the deadline)."""
    return unpack(*recv_frame(sock, deadline))
