"""One worker: import the submission, serve the trusted side's requests for one step."""
from __future__ import annotations

import socket

from pathlib import Path

from . import runtime, submission, wire


def serve(channel: socket.socket, folder: str, spawn: dict) -> None:
    """Serve one step: the host has confined this process already."""
    folder = Path(folder)
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
        try:
            wire.send(channel, answer)
        except TypeError as exc:  # something un-sendable slipped through
            wire.send(channel, {"ok": False, "error": {"type": "TypeError", "message": str(exc), "where": None,
                                                      "phase": "returning the result", "not_attempted": False}})
