"""A LocalCluster's workers forked warm from the client: the Grader and a zygote clone each, inherited.

On one machine (``--local-workers N``) the client has what every worker would otherwise build again: the
course and reference loaded, the suites collected, the reference answers warmed, and a zygote with torch
imported. Its workers are therefore forked from it (Dask's ``fork`` start method) rather than spawned, and
each takes one clone of the client's zygote, forked warm with its own uid block, as a ``--jobs`` process
does (both through ``sandbox/zygote.ClonesForForks``). Dask forks its workers with no arguments of ours,
so what they inherit waits here. A worker forked later (its nanny restarted it after a crash) finds no clone
left and starts a zygote of its own; a worker on another machine (``--scheduler``) starts everything itself.

A worker that drops root (``unprivileged.py``) takes what it inherits first, while it is still root
(``prepare``): its zygote (a clone, or one it starts, which needs root) and what the grader reads from the
course's files when it first grades (the reference's sources, for its reference worker): the folders they
are in need not be readable by the worker's uid.
"""
from __future__ import annotations

from autograder.sandbox.zygote import ClonesForForks, Zygote

_STATE: dict = {}


def offer(grader, grader_hash: str, clones: ClonesForForks) -> None:
    """In the client, before its workers are forked: what each of them may take."""
    _STATE.update(grader=grader, hash=grader_hash, clones=clones)


def withdraw() -> None:
    """In the client, once its workers are forked: the clones are theirs (a later fork gets none)."""
    if "clones" in _STATE:
        _STATE["clones"].withdraw()  # our copies only: each worker holds its own


def prepare() -> bool:
    """In a forked worker, as root, before it drops root: take the Grader with a zygote (the worker's clone, or
    one started now) and let it read what it would read from the course's files later. Whether there was
    anything to take."""
    if "grader" not in _STATE or "ready" in _STATE:
        return "ready" in _STATE
    grader, clones = _STATE["grader"], _STATE["clones"]
    grader.adopt(clones.take() or Zygote())
    grader.reference_worker  # noqa: B018 - reads the reference's sources (its worker itself starts when first asked)
    _STATE["ready"] = grader
    return True


def take(grader_hash: str):
    """In a forked worker: (the warm Grader, a zygote clone or None), or None if nothing was inherited. Once
    ``prepare``d: (the Grader, its zygote)."""
    if _STATE.get("hash") != grader_hash:
        return None
    if "ready" in _STATE:
        grader = _STATE["ready"]
        _STATE.clear()
        return grader, grader.zygote
    grader, clones = _STATE["grader"], _STATE["clones"]
    _STATE.clear()
    return grader, clones.take()


def forget() -> None:
    """In a worker, at the end of a run: nothing inherited is kept (the Grader, if it was never taken)."""
    _STATE.clear()
