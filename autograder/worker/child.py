"""One worker: import the submission, serve the trusted side's requests for one step."""
from __future__ import annotations

import socket
import sys

from pathlib import Path

from . import runtime, submission, wire


def serve(channel: socket.socket, folder: str, spawn: dict) -> None:
    """Serve one step: the host has confined this process already."""
    folder = Path(folder)
    # The grader's own modules stay loaded but are not findable by name from student code.
    for name in [n for n in sys.modules if n.startswith(("attention_worker", "autograder"))]:
        del sys.modules[name]
    modules, errors = submission.load(folder, spawn["modules"])
    # Build the stand-ins, then drop their source: nothing keeps the text reachable from frames or gc.
    sources = spawn.pop("standins", {})
    ws = runtime.prepare(folder, modules, sources)
    sources.clear()
    del sources
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
