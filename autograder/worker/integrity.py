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

#: what an answer passes through on its way out, besides the worker's own modules (the socket module's
#: hundreds of constants are not: the channel's methods are the ``socket.socket`` class's)
_STDLIB = (json, json.encoder, json.decoder, struct, socket.socket)


def watched(prefix: str) -> tuple:
    """The namespaces to watch: our modules (found now, before student code runs) and the wire's stdlib."""
    ours = tuple(m for name, m in sorted(sys.modules.items()) if name.startswith(prefix) and m is not None)
    for module in (*ours, json, json.encoder, json.decoder, struct):
        # the warnings machinery adds this dict on a module's first warning: present from the start, it only fills
        vars(module).setdefault("__warningregistry__", {})
    return ours + _STDLIB


def snapshot(namespaces: tuple, _id=id, _vars=vars, _type=type, _function=types.FunctionType,
             _tuple=tuple, _map=map) -> tuple:
    """Identities of everything ``namespaces`` bind, and of each function's code, defaults and closure cells."""
    out: list = []
    for namespace in namespaces:
        names = _vars(namespace)
        out += _map(_id, names)
        out += _map(_id, names.values())
        for value in names.values():
            if _type(value) is _function:
                out += (_id(value.__code__), _id(value.__defaults__), _id(value.__kwdefaults__))
                for cell in value.__closure__ or ():
                    try:
                        out.append(_id(cell.cell_contents))
                    except ValueError:  # an empty cell
                        out.append(0)
    return _tuple(out)
