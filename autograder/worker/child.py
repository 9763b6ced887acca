"""One worker: isolate, import the submission, serve the trusted side's requests for one step."""
from __future__ import annotations

import os
import socket
from pathlib import Path

from . import runtime, sandbox, submission, wire


def serve(channel: socket.socket, spawn: dict) -> None:
    os.setsid()
    scratch = Path(spawn["scratch"])
    sandbox.enter(spawn, scratch)
    folder = Path(spawn["folder"])
    modules, errors = submission.load(folder, spawn["modules"])
    ws = runtime.prepare(folder, modules, spawn.get("standins", {}))
    wire.send(channel, {"import_errors": errors})
    while True:
        try:
            request = wire.recv(channel)
        except wire.WireError:
            return
        if request.get("op") == "exit":
            return
        answer = runtime.run(request, ws)
        answer["output_bytes"] = sandbox.output_size(scratch)
        try:
            wire.send(channel, answer)
        except TypeError as exc:  # something un-sendable slipped through
            wire.send(channel, {"ok": False, "error": {"type": "TypeError", "message": str(exc), "where": None,
                                                      "phase": "returning the result", "not_attempted": False}})
