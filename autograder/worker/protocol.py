"""The control channel: how the trusted side talks to a zygote and to a submission's host.

A request is one JSON object sent in one ``sendmsg``, with file descriptors attached where it hands one
over (``SCM_RIGHTS``: a socket for a new host or worker, an output file); the answer is one JSON line.
Both sides use these functions only, so the framing is written once. (Requests and answers to a worker,
which carry tensors, use ``wire.py``.)

How a process ended crosses as data, never as a sentence to parse: ``{"state": "exit", "code": 0}``,
``{"state": "signal", "signal": "SIGXFSZ"}``, ``{"state": "running"}`` or ``{"state": "gone"}``.
"""
from __future__ import annotations

import json
import os
import signal
import socket

MAX_REQUEST = 1 << 22


def request(sock: socket.socket, message: dict, fds: list[int] = ()) -> None:
    socket.send_fds(sock, [json.dumps(message).encode("utf-8")], list(fds))


def receive(sock: socket.socket, max_fds: int) -> tuple[dict | None, list[int]]:
    """The next request and its descriptors; (None, []) when the other side is gone."""
    try:
        message, fds, _flags, _addr = socket.recv_fds(sock, MAX_REQUEST, max_fds)
    except OSError:
        return None, []
    return (json.loads(message.decode("utf-8")) if message else None), fds


def reply(sock: socket.socket, message: dict) -> None:
    """Answer on ``sock``; a trusted side that is gone (Ctrl-C or a kill ended its batch job) is not answered, and
    the next ``receive`` says it is gone: the zygote or host then ends as it does when told to, never with a
    traceback on the grader's terminal."""
    try:
        sock.sendall(json.dumps(message).encode("utf-8") + b"\n")
    except (BrokenPipeError, ConnectionResetError):
        pass


def answer(reader) -> dict | None:
    """The next answer line from ``sock.makefile("rb")``; None when the other side is gone."""
    try:
        line = reader.readline()
    except (OSError, ValueError):
        return None
    return json.loads(line) if line else None


def ended(status: int) -> dict:
    """A ``waitpid`` status as data."""
    return returned(-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


def returned(code: int) -> dict:
    """A return code as ``subprocess`` gives it (negative: killed by that signal) as data."""
    if code >= 0:
        return {"state": "exit", "code": code}
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = str(-code)
    return {"state": "signal", "signal": name}


RUNNING = {"state": "running"}
GONE = {"state": "gone"}
