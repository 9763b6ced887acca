"""Did the student's code tamper with the worker's own machinery during a request?

``hygiene.py`` asks between steps whether a worker may serve another one; this asks after every request,
before its answer is sent, whether the code that builds and sends answers is still the code the worker
started with: the worker's own modules, the standard modules on the answer's way out (json, struct,
socket), and each of their functions' code, defaults and closures. It compares identities only (a tuple of
ints), with builtins bound at definition, so it runs no code the student could have replaced. A change
turns the answer into an error: that count scores zero, and the worker is retired.
"""
from __future__ import annotations

import json
import json.decoder
import json.encoder
import socket
import struct
import sys
import types

#: the worker's own modules, by name prefix, plus what an answer passes through on its way out
_STDLIB = (json, json.encoder, json.decoder, struct, socket)


def watched(prefix: str) -> tuple:
    """The namespaces to watch: our modules (found now, before student code runs) and the wire's stdlib."""
    ours = tuple(m for name, m in sorted(sys.modules.items()) if name.startswith(prefix) and m is not None)
    return ours + _STDLIB + (socket.socket,)


def snapshot(namespaces: tuple, _id=id, _vars=vars, _type=type, _function=types.FunctionType,
             _tuple=tuple, _append=list.append, _str=str) -> tuple:
    """Identities of everything ``namespaces`` bind, and of each function's code, defaults and closure cells."""
    out: list = []
    for namespace in namespaces:
        names = _vars(namespace)
        for key, value in names.items():
            if _type(key) is _str and key == "__warningregistry__":  # written by the warnings machinery itself
                continue
            _append(out, _id(key))
            _append(out, _id(value))
            if _type(value) is _function:
                _append(out, _id(value.__code__))
                _append(out, _id(value.__defaults__))
                _append(out, _id(value.__kwdefaults__))
                for cell in value.__closure__ or ():
                    _append(out, _id(cell.cell_contents) if cell.cell_contents is not None else 0)
    return _tuple(out)
