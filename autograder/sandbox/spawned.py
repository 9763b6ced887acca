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
import time
from pathlib import Path

from autograder.worker import protocol

from .host import Worker, WorkerError

TOKEN_BYTES = 32  # hex characters of the token a spawned worker sends first
#: how long a spawned worker may take to start (Python, then ``import torch``: seconds on a busy machine) and connect
START_SECONDS = 120
#: a worker that did not start (it ended, or never connected) is started once more: none of the student's code has
#: run in it yet (it connects before it imports the submission), so the step loses nothing to the grader's start-up
START_TRIES = 2
#: how often the wait for the connection looks whether the worker has ended meanwhile
POLL_SECONDS = 0.25


class NotStarted(Exception):
    """A spawned worker that ended, or never connected, before it proved it was ours."""


class SpawnedSandbox:
    """One submission's workers, each a fresh ``python -m autograder.worker.spawned`` process."""

    def __init__(self, request: dict):
        self.folder = request["folder"]
        self.scratch = Path(request["scratch"])
        self.limits = request.get("limits", {})
        self.process: subprocess.Popen | None = None
        self.dead = False

    def spawn(self, spawn: dict, output: Path, budget: float, total: float | None = None, callbacks=None) -> Worker:
        why = ""
        for _ in range(START_TRIES):
            self.end()
            try:
                return Worker(self._start(spawn, output), self, budget, callbacks=callbacks)
            except NotStarted as exc:
                why = str(exc)
        self.end()
        raise WorkerError(f"the worker process did not start ({why}; tried {START_TRIES} times)")

    def _start(self, spawn: dict, output: Path) -> socket.socket:
        """Start a worker and take its connection, once it has sent the one-time token it was given."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(TOKEN_BYTES // 2)
        with socket.create_server(("127.0.0.1", 0)) as listener, open(output, "wb") as out:
            listener.settimeout(POLL_SECONDS)
            env = {**os.environ, "AUTOGRADER_WORKER_TOKEN": token, "OMP_NUM_THREADS": "1"}
            package_root = str(Path(__file__).resolve().parents[2])
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
            self.process = subprocess.Popen(
                [sys.executable, "-m", "autograder.worker.spawned", str(listener.getsockname()[1]), self.folder,
                 json.dumps(spawn), json.dumps(self.limits)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=self.scratch, env=env)
            deadline = time.monotonic() + START_SECONDS
            while True:
                try:
                    conn, _ = listener.accept()
                except socket.timeout:
                    code = self.process.poll()
                    if code is not None:
                        raise NotStarted(f"it ended with exit code {code} before connecting") from None
                    if time.monotonic() >= deadline:
                        raise NotStarted(f"it did not connect within {START_SECONDS} s") from None
                    continue
                except OSError as exc:
                    raise NotStarted(f"waiting for it failed: {exc.strerror or exc}") from None
                try:
                    conn.settimeout(10)
                    sent = b""
                    while len(sent) < TOKEN_BYTES:
                        chunk = conn.recv(TOKEN_BYTES - len(sent))
                        if not chunk:
                            break
                        sent += chunk
                except OSError:
                    sent = b""
                if hmac.compare_digest(sent, token.encode("ascii")):
                    return conn
                conn.close()  # not our worker

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
