"""The trusted side's handle on workers started as processes, where ``os.fork`` does not exist (Windows).

It stands in for ``workers.Sandbox`` (a forked host) in ``grade check`` on such a machine: ``spawn``
starts ``autograder.worker.spawned`` with a one-time token and waits for it to connect back on loopback;
``end`` ends it. The step's time limit is kept here, as everywhere, by the socket's timeout and a kill;
memory and output limits apply where the platform has rlimits.
"""
from __future__ import annotations

import hmac
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from autograder.worker import protocol

from .host import Worker, WorkerError

TOKEN_BYTES = 32  # hex characters of the token a spawned worker sends first
#: how long a spawned worker may take to start (Python, then ``import torch``: seconds on a busy machine) and connect
START_SECONDS = 120


class SpawnedSandbox:
    """One submission's workers, each a fresh ``python -m autograder.worker.spawned`` process."""

    def __init__(self, request: dict):
        self.folder = request["folder"]
        self.scratch = Path(request["scratch"])
        self.limits = request.get("limits", {})
        self.process: subprocess.Popen | None = None
        self.dead = False

    def spawn(self, spawn: dict, output: Path, budget: float, total: float | None = None, callbacks=None) -> Worker:
        self.end()
        self.scratch.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(TOKEN_BYTES // 2)
        with socket.create_server(("127.0.0.1", 0)) as listener, open(output, "wb") as out:
            listener.settimeout(START_SECONDS)
            env = {**os.environ, "AUTOGRADER_WORKER_TOKEN": token, "OMP_NUM_THREADS": "1"}
            package_root = str(Path(__file__).resolve().parents[2])
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
            self.process = subprocess.Popen(
                [sys.executable, "-m", "autograder.worker.spawned", str(listener.getsockname()[1]), self.folder,
                 json.dumps(spawn["modules"]), json.dumps(self.limits)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=self.scratch, env=env)
            try:
                while True:
                    conn, _ = listener.accept()
                    conn.settimeout(10)
                    sent = b""
                    while len(sent) < TOKEN_BYTES:
                        chunk = conn.recv(TOKEN_BYTES - len(sent))
                        if not chunk:
                            break
                        sent += chunk
                    if hmac.compare_digest(sent, token.encode("ascii")):
                        break
                    conn.close()  # not our worker
            except (OSError, socket.timeout):
                self.end()
                raise WorkerError("the worker process did not start") from None
        return Worker(conn, self, budget, callbacks=callbacks)

    def end(self, wait: float = 0.0) -> dict:
        """End the current worker (after ``wait`` s of grace); say how it ended (``protocol.ended``)."""
        process, self.process = self.process, None
        if process is None:
            return protocol.GONE
        try:
            code = process.wait(timeout=wait) if wait else process.poll()
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            process.kill()
            code = process.wait()
        status = protocol.returned(code)
        shutil.rmtree(self.scratch, ignore_errors=True)  # nothing a step wrote reaches the next
        return status

    def close(self) -> None:
        self.end()
        self.dead = True
