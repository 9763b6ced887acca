"""A call's tensor arguments, in memory the trusted side owns: whether the student's code changed them in place.

A step that modifies its input in place (``x /= x.sum()``) loses the count: its caller's tensor is not what it was.
That is judged here, from what the caller sees after the call, never from what the worker says: each top-level
tensor argument of a call is written into a buffer of the trusted side's own (a ``memfd``: anonymous memory, sealed
against growing and shrinking; an unlinked temporary file where there is none), whose descriptor goes to the worker
with the call's frame (``wire.send_with_fd``). The worker maps it and hands the student's code tensors that live in
it (``worker/argument_buffer.py``). Once the call's answer is in, the trusted side reads its buffer back and compares
each argument with what it wrote. A worker whose code writes to the buffer can only make its own inputs differ;
one that puts them back has left them as its caller sees them, which is what is judged.

``tests/unit/test_argument_buffer.py`` shows both: an in-place step counted as modified whatever its answer says, and a
worker that sends a forged ``args_after`` gaining nothing.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import torch

from autograder.worker import wire

from .per_request import PerRequest

_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64",
          torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8",
          torch.bool: "bool"}
#: each argument starts at a multiple of this (any dtype's alignment)
ALIGN = 64


@dataclass(frozen=True)
class Outgoing:
    """A call as it is sent: its frame (tensor arguments replaced by ``$shared`` markers) and, when it has such
    arguments, the bytes of the buffer the frame refers to and each argument's place in it."""
    frame: bytes
    data: bytes | None = None
    slots: tuple[tuple[int, int, int, torch.dtype, tuple[int, ...]], ...] = ()  # (index, offset, bytes, dtype, shape)


def _arguments_key(request: dict) -> str | None:
    if request.get("kind") == "module":
        return "forward_args"
    if request.get("kind") == "function":
        return "args"
    return None


def outgoing(request: dict) -> Outgoing:
    """``request`` as sent to a worker: its top-level tensor arguments moved into a buffer."""
    key = _arguments_key(request)
    args = request.get(key) if key else None
    if not isinstance(args, list) or not any(isinstance(a, torch.Tensor) and a.dtype in _NAMES for a in args):
        return Outgoing(wire.pack(request))
    markers, chunks, slots, at = [], [], [], 0
    for index, value in enumerate(args):
        if not (isinstance(value, torch.Tensor) and value.dtype in _NAMES):
            markers.append(value)
            continue
        plain = value.detach().to("cpu").contiguous()
        data = plain.reshape(-1).view(torch.uint8).numpy().tobytes() if plain.numel() else b""
        pad = -at % ALIGN
        chunks.append(b"\0" * pad + data)
        at += pad
        slots.append((index, at, len(data), plain.dtype, tuple(plain.shape)))
        markers.append({"$shared": {"at": at, "dtype": _NAMES[plain.dtype], "shape": list(plain.shape)}})
        at += len(data)
    return Outgoing(wire.pack({**request, key: markers}), b"".join(chunks), tuple(slots))


#: each request made ready once: a batch sends the same calls to every submission
prepared = PerRequest(outgoing)


class Handed:
    """One call's buffer, handed to a worker: made from ``Outgoing.data``, read back by ``modified``."""

    def __init__(self, call: Outgoing):
        self.call = call
        self.fd = _new_buffer(len(call.data or b""))
        if call.data:
            os.pwrite(self.fd, call.data, 0)
        _seal(self.fd)

    def modified(self) -> list[int]:
        """The arguments whose bytes differ from what was written, as their caller now sees them."""
        try:
            now = os.pread(self.fd, len(self.call.data or b""), 0)
        finally:
            self.close()
        if now == self.call.data:
            return []
        changed = []
        for index, offset, size, dtype, shape in self.call.slots:
            before, after = self.call.data[offset:offset + size], now[offset:offset + size]
            if before != after and not _same_values(before, after, dtype, shape):
                changed.append(index)
        return changed

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _same_values(before: bytes, after: bytes, dtype: torch.dtype, shape: tuple[int, ...]) -> bool:
    """Other bytes for the same values (NaN payloads, -0.0 written as 0.0): not a change the caller can tell."""
    if len(before) != len(after):
        return False
    a = torch.frombuffer(bytearray(before), dtype=dtype).reshape(shape)
    b = torch.frombuffer(bytearray(after), dtype=dtype).reshape(shape)
    if not dtype.is_floating_point:
        return bool(torch.equal(a, b))
    return bool(((a == b) | (a.isnan() & b.isnan())).all())


def _new_buffer(size: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("attention-grader-arguments", os.MFD_CLOEXEC | getattr(os, "MFD_ALLOW_SEALING", 0))
    else:  # macOS: an unlinked file of the trusted side's, in its own temporary folder
        with tempfile.TemporaryFile() as handle:
            fd = os.dup(handle.fileno())
    os.ftruncate(fd, size)
    return fd


def _seal(fd: int) -> None:
    """The buffer's size fixed: a worker can change its bytes, never shrink it under the trusted side's read."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only; a sealed memfd is Linux's

        seals = getattr(fcntl, "F_SEAL_SHRINK", 0) | getattr(fcntl, "F_SEAL_GROW", 0) | getattr(fcntl, "F_SEAL_SEAL", 0)
        if seals and hasattr(fcntl, "F_ADD_SEALS"):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except OSError:  # an unlinked file cannot be sealed: a shrunk one reads back short, which counts as changed
        pass
