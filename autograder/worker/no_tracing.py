"""No trace or profile function in a worker that runs student code.

A trace function (``sys.settrace``, ``threading.settrace``) or a profile function (``sys.setprofile``) set by
student code is then called in every frame the worker runs, the worker's own included: after the student's call
has returned, it could change the answer the worker is about to send (the facts judged on the trusted side:
which inputs were modified in place, whether the output has a gradient graph). The red team's
``trace_forges_facts`` scored a point more than its control that way.

So an audit hook (PEP 578), installed before the submission is imported, refuses them; Python has no way to
remove an audit hook. It also refuses any new ``__code__`` for a function, the worker's own included, and new
``__defaults__`` or ``__kwdefaults__`` for the worker's own functions: its way out calls only what their defaults
bound before student code ran (seal.py). It decides with nothing but its arguments and constants (no builtin: ``len`` rebound let the red
team past an earlier version), and an exception of any kind (even one made by a replaced ``RuntimeError``) stops
the event. It is called for every audited event, so the worker's own checks raise none per object
(``integrity.py``, ``hygiene.py``).

What it does not stop: student code that runs after the student's call returned without a tracer. A finalizer
or a ``gc`` callback cannot: ``runtime.run`` seals the answer with the collector off. A thread still running can
(a known limit, docs/isolation.md).
"""
from __future__ import annotations

import sys


def refuse_tracing(event: str, args: tuple, _kept: tuple = ()) -> None:
    """The audit hook (``install``); ``_kept``: the functions whose defaults may not change."""
    if event in ("sys.settrace", "sys.setprofile", "sys._settraceallthreads", "sys._setprofileallthreads",
                 "sys.monitoring.register_callback"):
        raise RuntimeError(f"{event} is not allowed while your code is graded: a trace or profile function "
                           "could change what the grader is told (remove it, and any debugger call)")
    if event == "object.__setattr__":
        name = args[1:2]  # a slice, not len(): builtins can be rebound
        if name == ("__code__",):
            raise RuntimeError("a function's __code__ cannot be replaced while your code is graded")
        if name == ("__defaults__",) or name == ("__kwdefaults__",):
            for function in _kept:  # by identity: ``in`` would call the object's own __eq__
                if function is args[0]:
                    raise RuntimeError(f"the grader's own {args[1]} cannot be replaced while your code is graded")


def install(kept: tuple = ()) -> None:
    """Refuse tracing in this process from now on (a worker's, before the submission is imported), and new defaults
    for ``kept`` (the worker's own functions, whose defaults hold what its way out calls: seal.py) and for this hook.
    Other functions' defaults may change: ``collections.namedtuple`` sets them, in a lazy import of torch's too."""
    refuse_tracing.__defaults__ = ((*kept, refuse_tracing, install),)
    sys.addaudithook(refuse_tracing)
