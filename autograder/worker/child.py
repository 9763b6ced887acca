"""One worker: import the submission, serve the trusted side's requests for one step or more.

Requests: ``{"op": "step"}`` starts a step (fresh random state); ``{"op": "standins", "standins": {...}}``
builds and substitutes stand-ins (for the steps graded last); with ``"if_clean": true`` either does so
only if the worker is still as it was after import (hygiene.py), else answers what changed;
``{"op": "exit"}``; anything else is a call for ``runtime.run``.
"""
from __future__ import annotations

import socket
import sys

from pathlib import Path

from . import hygiene, runtime, sandbox, submission, wire


def serve(channel: socket.socket, folder: str, spawn: dict) -> None:
    """Serve one step: the host has confined this process already."""
    folder = Path(folder)
    # The grader's own modules stay loaded but are not findable by name from student code.
    for name in [n for n in sys.modules if n[:1] == "a" and n.startswith(("attention_worker", "autograder"))]:
        del sys.modules[name]
    modules, errors = submission.load(folder, spawn["modules"])
    # Build the stand-ins, then drop their source: nothing keeps the text reachable from frames or gc.
    sources = spawn.pop("standins", {})
    ws = runtime.prepare(folder, modules, sources)
    sources.clear()
    del sources
    baseline = hygiene.fingerprint(modules)
    wire.send(channel, {"import_errors": errors})
    while True:
        try:
            request = wire.recv(channel)
        except wire.WireError:
            return
        if request.get("op") == "exit":
            return
        if request.get("op") in ("step", "standins"):
            # A worker that served a step serves another only if it is still as it was after import.
            changed = hygiene.changes(baseline, hygiene.fingerprint(modules)) if request.get("if_clean") else []
            cpu_seconds = request.get("cpu_seconds")
            if changed:
                request.clear()
            elif request["op"] == "standins":  # a clean worker takes on the steps graded with stand-ins
                ws.add_standins(request.pop("standins"))
                request.clear()
                baseline = hygiene.fingerprint(modules)
            else:  # a step begins: the same random state for every step
                hygiene.fresh_random_state()
            if not changed and cpu_seconds:  # this step's CPU budget, from now
                sandbox.renew_cpu(float(cpu_seconds))
            wire.send(channel, {"changed": changed})
            continue
        answer = runtime.run(request, ws)
        try:
            wire.send(channel, answer)
        except TypeError as exc:  # something un-sendable slipped through
            wire.send(channel, {"ok": False, "error": {"type": "TypeError", "message": str(exc), "where": None,
                                                      "phase": "returning the result", "not_attempted": False}})
