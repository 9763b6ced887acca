"""A LocalCluster's workers forked warm from the client: the Grader and a zygote clone each, inherited.

On one machine (``--local-workers N``) the client has what every worker would otherwise build again: the
course and reference loaded, the suites collected, the reference answers warmed, and a zygote with torch
imported. Its workers are therefore forked from it (Dask's ``fork`` start method) rather than spawned, and
each takes one clone of the client's zygote, forked warm with its own uid block, as a ``--jobs`` process
does (``autograde/batch.py``). A worker forked later (its nanny restarted it after a crash) finds no clone
left and starts a zygote of its own; a worker on another machine (``--scheduler``) starts everything itself.
"""
from __future__ import annotations

import multiprocessing

_STATE: dict = {}


def offer(grader, grader_hash: str, zygote, clones: list) -> None:
    """In the client, before its workers are forked: what each of them may take."""
    _STATE.update(grader=grader, hash=grader_hash, zygote=zygote, clones=list(clones),
                  slots=multiprocessing.get_context("fork").Value("i", 0))


def withdraw() -> None:
    """In the client, once its workers are forked: the clones are theirs (a later fork gets none)."""
    for clone in _STATE.get("clones", []):
        clone.forget()  # our copies only: each worker holds its own
    _STATE["clones"] = []


def take(grader_hash: str):
    """In a forked worker: (the warm Grader, a zygote clone or None), or None if nothing was inherited."""
    if _STATE.get("hash") != grader_hash:
        return None
    clones, zygote = _STATE["clones"], _STATE["zygote"]
    with _STATE["slots"].get_lock():
        slot = _STATE["slots"].value
        _STATE["slots"].value += 1
    for i, clone in enumerate(clones):
        if i != slot:
            clone.forget()  # another worker's
    zygote.forget()  # the client's own: never used from a worker
    grader = _STATE["grader"]
    mine = clones[slot] if slot < len(clones) else None
    _STATE.clear()
    return grader, mine
