"""No trace or profile function in a worker once student code may run.

A trace function runs before each line of the worker's own frames, and on CPython the changes it makes to a
frame's locals are written back: set on ``child.serve``'s frame, it could rewrite an answer after the student's
call returned and before it is sent, and then remove itself (the red team's ``trace_rebind_answer``: three
honest bugs scored as if fixed). The integrity check compares the grader's functions, not an answer held in a
local, so a worker refuses every way of setting one: ``sys.settrace`` and ``sys.setprofile`` (``threading``'s
own go through them when a thread starts) and ``sys.monitoring`` (Python 3.12 and later). The refusal is an
audit hook (PEP 578), which no code can remove; it reads nothing a student could rebind (no globals, defaults
or closure: any exception it raises aborts the call), and it refuses a new ``__code__`` for any function, its
own included.
"""
from __future__ import annotations

import sys


def _refuse(event, args):
    if event == "sys.settrace" or event == "sys.setprofile" or event == "sys.monitoring.register_callback":
        raise RuntimeError("grading runs without trace or profile functions (a debugger's breakpoint, a tracer, "
                           "a profiler): your code asked for one")
    if event == "object.__setattr__" and args[1] == "__code__":
        raise RuntimeError("grading runs without changing a function's code object: your code tried to")


def refuse_tracing() -> None:
    """From now on, in this process: no trace, profile or monitoring function, no function given new code."""
    sys.addaudithook(_refuse)
