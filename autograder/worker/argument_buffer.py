"""A call's tensor arguments, in memory the trusted side owns: the worker's half.

Whether the student's code modified an input in place is judged on the trusted side, from what the caller sees
after the call: the trusted side writes each top-level tensor argument of a call into a buffer of its own (a
``memfd``, or an unlinked file where there is none), hands the buffer's descriptor over with the call's frame, and
reads the buffer back once the call's answer has come (``sandbox/argument_buffer.py``). The worker maps that buffer
and gives the student's code tensors that live in it, so an in-place change lands in memory the trusted side reads
itself. Nothing the worker says about its arguments is asked for, nor read.

A request marks such an argument ``{"$shared": {"at": offset, "dtype": name, "shape": [...]}}`` (``marker``).
"""
from __future__ import annotations

import mmap
import os

import torch

_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
           "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8,
           "bool": torch.bool}


class Buffer:
    """One call's buffer, mapped shared and writable: the tensors made from it are views of it."""

    def __init__(self, fd: int):
        try:
            size = os.fstat(fd).st_size
            self.memory = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) if size else None
        finally:
            os.close(fd)

    def tensor(self, spec: dict) -> torch.Tensor:
        dtype = _DTYPES[spec["dtype"]]
        shape = [int(d) for d in spec["shape"]]
        count = 1
        for d in shape:
            count *= d
        if count == 0 or self.memory is None:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(self.memory, dtype=dtype, count=count, offset=int(spec["at"])).reshape(shape)


def is_marker(value) -> bool:
    return type(value) is dict and len(value) == 1 and "$shared" in value
