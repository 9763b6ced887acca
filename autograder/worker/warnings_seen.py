"""The warnings Python and torch raise about the student's own files, collected as data instead of printed.

While the student's modules compile (a ``SyntaxWarning``: ``assert (x, "...")`` is always true) and while a
request runs (torch's ``x.T`` on a batch, a deprecation), every warning is shown to ``collecting``'s hook instead
of stderr: one whose file is in the submission's folder is kept (file name, line, category, message; each once),
the others (torch's own files, the kit's) are dropped. So they never count as the student's printed output; the
answer carries them, and the trusted side keeps those that point at a line of the student's staged files
(``grading/own_source.py``). As everything a worker says, they are claims: words for the student, never points.
"""
from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path

import torch

#: at most this many warnings are kept for one import or one request, each message cut to this many characters
MAX_KEPT, MAX_MESSAGE = 20, 500


@contextlib.contextmanager
def collecting(folder: Path):
    """Collect the warnings about files in ``folder`` into the list this yields, every occurrence seen (each kept
    once; torch's warn-once ones too), nothing printed."""
    seen: list[dict] = []
    root = os.path.join(str(folder), "")

    def show(message, category, filename, lineno, file=None, line=None):  # warnings.showwarning's signature
        try:
            if len(seen) >= MAX_KEPT or not str(filename).startswith(root):
                return
            found = {"file": Path(str(filename)).name, "line": int(lineno),
                     "category": getattr(category, "__name__", "Warning"), "message": str(message)[:MAX_MESSAGE]}
            if found not in seen:
                seen.append(found)
        except BaseException:  # noqa: BLE001 - a hostile warning's __str__: dropped, never a crash
            pass

    once = torch.is_warn_always_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        torch.set_warn_always(True)  # torch's warn-once warnings (x.T on a batch) are seen on every call too
        try:
            yield seen
        finally:
            torch.set_warn_always(once)
