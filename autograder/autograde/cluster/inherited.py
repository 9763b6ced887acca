"""A LocalCluster's workers forked warm from the client: the Grader and a zygote clone each, inherited.

On one machine (``--local-workers N``) the client has what every worker would otherwise build again: the
course and reference loaded, the suites collected, the reference answers warmed, and a zygote with torch
imported. Its workers are therefore forked from it (Dask's ``fork`` start method) rather than spawned, and
each takes one clone of the client's zygote, forked warm with its own uid block, as a ``--jobs`` process
does (both through ``sandbox/zygote.ClonesForForks``). Dask forks its workers with no arguments of ours,
so what they inherit waits here. A worker forked later (its nanny restarted it after a crash) finds no clone
left and starts a zygote of its own; a worker on another machine (``--scheduler``) starts everything itself.
"""
from __future__ import annotations

from autograder.sandbox.zygote import ClonesForForks

_STATE: dict = {}


def offer(grader, grader_hash: str, clones: ClonesForForks) -> None:
    """In the client, before its workers are forked: what each of them may take."""
    _STATE.update(grader=grader, hash=grader_hash, clones=clones)


def withdraw() -> None:
    """In the client, once its workers are forked: the clones are theirs (a later fork gets none)."""
    if "clones" in _STATE:
        _STATE["clones"].withdraw()  # our copies only: each worker holds its own


def take(grader_hash: str):
    """In a forked worker: (the warm Grader, a zygote clone or None), or None if nothing was inherited."""
    if _STATE.get("hash") != grader_hash:
        return None
    grader, clones = _STATE["grader"], _STATE["clones"]
    _STATE.clear()
    return grader, clones.take()
