"""No trace or profile function in a worker that runs student code.

A trace function (``sys.settrace``, ``threading.settrace``) or a profile function (``sys.setprofile``) set by
student code is then called in every frame the worker runs, the worker's own included: after the student's call
has returned, it could change the answer the worker is about to send (the facts judged on the trusted side:
which inputs were modified in place, whether the output has a gradient graph). The red team's
``trace_forges_facts`` scored a point more than its control that way.

So an audit hook (PEP 578), installed before the submission is imported, refuses them; Python has no way to
remove an audit hook. It also refuses any new ``__code__``, ``__defaults__`` or ``__kwdefaults__`` for a function,
the worker's own included: the worker's way out calls only what its functions' defaults bound before student code
ran (seal.py). It decides with nothing but its arguments and constants (no builtin: ``len`` rebound let the red
team past an earlier version), and an exception of any kind (even one made by a replaced ``RuntimeError``) stops
the event. It is called for every audited event, so the worker's own checks raise none per object
(``integrity.py``, ``hygiene.py``).

What it does not stop: student code that runs after the student's call returned without a tracer. A finalizer
or a ``gc`` callback cannot: ``runtime.run`` seals the answer with the collector off. A thread still running can
(a known limit, docs/isolation.md).
"""
from __future__ import annotations

import sys


def refuse_tracing(event: str, args: tuple) -> None:
    """The audit hook (``install``)."""
    if event in ("sys.settrace", "sys.setprofile", "sys._settraceallthreads", "sys._setprofileallthreads",
                 "sys.monitoring.register_callback"):
        raise RuntimeError(f"{event} is not allowed while your code is graded: a trace or profile function "
                           "could change what the grader is told (remove it, and any debugger call)")
    if event == "object.__setattr__" and args[1:2] in (("__code__",), ("__defaults__",), ("__kwdefaults__",)):
        # a slice, not len(): builtins can be rebound
        raise RuntimeError(f"a function's {args[1]} cannot be replaced while your code is graded")


def install() -> None:
    """Refuse tracing in this process from now on (a worker's, before the submission is imported)."""
    sys.addaudithook(refuse_tracing)
