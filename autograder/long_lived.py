"""Loading what a grading process keeps for its whole life (torch, the course, the public cases), collector paused.

With torch loaded, one full pass of Python's cyclic collector walks about 200,000 objects: 15-60 ms each time.
Loading a command's own modules and data after torch (pydantic's schemas, the public cases) set off
two to four such passes, and a batch job set off more while grading. What is loaded here is never garbage: it is
frozen once loaded (``gc.freeze``, as the zygote does before it forks: ``worker/zygote.py``), so later passes walk
only what is new, and a process forked later does not copy the pages those passes would write to.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Load, with the collector paused; then freeze what is there, and let the collector run again as before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
