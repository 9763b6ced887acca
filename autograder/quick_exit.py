"""Ending ``grade``'s own process as soon as a command's output is out, without the interpreter's teardown.

A ``grade check`` or ``grade autograde`` has torch loaded: tearing the interpreter down frees every object
torch made, one by one (0.15-0.3 s: more than the check of a step takes on a warm server, and the last thing a
batch's user waits for). The command line's own process (the console script, ``command_line`` in ``cli.py``)
skips that: it runs the exit hooks the interpreter would run (``atexit``: ``weakref.finalize``, logging, the
kit's own), flushes its two streams, and ends with the command's status (``os._exit``). A process that only
calls the command (a test's ``CliRunner``, a notebook, a script) is never ended this way: it did not start
through ``command_line``. Neither is one with a thread still running that the interpreter's teardown would wait
for; a daemon thread (tqdm's monitor) it would not wait for, so neither does this.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading

#: the click ``obj`` that ``command_line`` gives ``main``: only the command line's own process carries it
COMMAND_LINE = "grade's command line"


def allowed(obj) -> bool:
    """Whether this process may end at once: the command line's own, with no other thread running but daemons."""
    main = threading.main_thread()
    return obj == COMMAND_LINE and all(thread is main or thread.daemon for thread in threading.enumerate())


def end(code: int) -> None:
    """Run the exit hooks, flush standard output and error, and end the process with ``code``."""
    atexit._run_exitfuncs()  # what Py_Finalize runs first (no public name for it)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away (`grade check | head`), a closed stream
            pass
    os._exit(code)
