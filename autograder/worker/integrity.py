"""Did the student's code tamper with the worker's own machinery during a request?

``hygiene.py`` asks between steps whether a worker may serve another one; this asks after every request,
before its answer is sent, whether the code that builds and sends answers is still the code the worker
started with: the worker's own modules, the standard modules on the answer's way out (json, struct,
socket), and what their functions' closure cells hold. It compares identities only (``is``,
never ``==``, which would call a replaced object's own ``__eq__``), with C-level callables bound at
definition, so it runs no code the student could have replaced. A change turns the answer into an error:
that count scores zero, and the worker is retired. A change undone before the check is not seen here: what runs
between the end of the student's call and the answer's bytes looks nothing up, so no such change can reach the
answer (seal.py).

A function's code and defaults need no watching: the worker's audit hook refuses a new ``__code__``,
``__defaults__`` or ``__kwdefaults__`` for these (no_tracing.py), and its closure and globals cannot be rebound (read-only
attributes; the globals are the namespaces watched here). What can change is what a closure cell holds: the cells'
contents are read as the collector sees them (``gc.get_referents``, all cells in one call), not one attribute at a
time. (Reading every function's parts as well doubled the check's cost: 77 us a request against 41 us.)
"""
from __future__ import annotations

import gc
import itertools
import json
import json.decoder
import json.encoder
import operator
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


def functions(namespaces: tuple) -> tuple:
    """The functions ``namespaces`` bind, found before student code runs: the ones whose new code or defaults the
    worker's audit hook refuses (no_tracing.install)."""
    return tuple(value for namespace in namespaces for value in vars(namespace).values()
                 if type(value) is types.FunctionType)


def cells(namespaces: tuple) -> tuple:
    """The closure cells of the functions ``namespaces`` bind, found before student code runs. A function added,
    removed or swapped changes its namespace's values, which are watched too."""
    return tuple(cell for namespace in namespaces for value in vars(namespace).values()
                 if type(value) is types.FunctionType for cell in value.__closure__ or ())


def snapshot(namespaces: tuple, cells: tuple, baseline: tuple | None = None, _vars=vars, _tuple=tuple, _map=map,
             _chain=itertools.chain.from_iterable, _keys=operator.methodcaller("keys"),
             _values=operator.methodcaller("values"), _referents=gc.get_referents, _len=len, _all=all,
             _is=operator.is_):
    """Everything ``namespaces`` bind (each name and what it binds), and what each of ``cells`` (from ``cells()``)
    holds, as one tuple of the objects themselves; with ``baseline`` (such a tuple, taken earlier), whether the
    objects are the very same now (an emptied or filled cell changes the count). One function, whose code and
    defaults (positional only: a tuple, which cannot change in place) the worker checks are its own before it trusts
    the answer. Each step is a C-level call: no Python frame, no new object, per value."""
    spaces = _tuple(_map(_vars, namespaces))
    out = [*_chain(_map(_keys, spaces)), *_chain(_map(_values, spaces)), *_referents(*cells)]
    if baseline is None:
        return _tuple(out)
    return _len(out) == _len(baseline) and _all(_map(_is, out, baseline))
