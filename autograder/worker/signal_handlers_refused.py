"""A submission's ``signal.signal`` refused in words, in every worker, on every platform.

A worker keeps its signals for itself: a handler of the student's would run between two bytecodes of whatever runs
when its signal comes, the answer's way out included (runtime.py). On x86_64 Linux the worker's second seccomp filter
refuses ``rt_sigaction`` itself (``seccomp.no_signal_handlers``), which a student reads as ``[Errno 1] Operation not
permitted``; on macOS, Windows or an ARM machine there is no filter, and the call went through, so ``grade check``
there passed code that ``grade autograde`` fails. So ``signal.signal`` and ``signal.siginterrupt`` (which sets a
handler's flags through the same call) raise the same ``PermissionError`` everywhere, with words that name the limit.

Only the words and the verdict of honest code rest on this: it is Python, which student code can undo (``_signal``
is still there). Where the filter is installed, what is undone is refused all the same; elsewhere a handler set so
is ignored on the answer's way out (``runtime._quiet``).
"""
from __future__ import annotations

import errno
import signal

MESSAGE = ("the grader does not let a submission set signal handlers (signal.signal): the worker keeps its signals "
           "for its own limits, so remove this call")


def _refused(*args, **kwargs):
    raise PermissionError(errno.EPERM, MESSAGE)


def install() -> None:
    """From now on, in this process (a worker, before the submission is imported)."""
    signal.signal = _refused
    signal.siginterrupt = _refused
