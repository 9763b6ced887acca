"""A step's time limit is one wall-clock deadline for a whole exchange, however the bytes arrive.

A worker that writes a frame header and then trickles a byte every so often, while sleeping (no CPU, so
no CPU limit fires), used to restart a per-``recv`` socket timeout with every byte: the batch never ended.
"""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from autograder.sandbox.local_zygote import LocalZygote
from autograder.worker import wire


def _trickle(sock: socket.socket, stop: threading.Event, every: float = 0.05) -> None:
    try:
        sock.sendall(struct.pack(">I", 1000))  # a header of 1000 bytes announced ...
        while not stop.is_set():  # ... and sent one byte at a time, slowly
            sock.sendall(b" ")
            stop.wait(every)
    except OSError:
        pass


@pytest.fixture
def trickling():
    ours, theirs = socket.socketpair()
    stop = threading.Event()
    thread = threading.Thread(target=_trickle, args=(theirs, stop), daemon=True)
    thread.start()
    yield ours
    stop.set()
    ours.close()
    theirs.close()
    thread.join(5)


def test_a_trickled_frame_ends_at_the_deadline(trickling):
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        wire.recv(trickling, deadline=start + 0.5)
    assert time.monotonic() - start < 5  # the deadline, not byte after byte for ever (generous on a loaded machine)


def test_control_a_per_read_timeout_is_restarted_by_each_byte(trickling):
    """What the grader did before: a timeout per read. The trickle keeps it alive past any deadline."""
    trickling.settimeout(0.5)
    start = time.monotonic()
    got = b""
    while time.monotonic() - start < 1.5:  # three times the "limit", and still no timeout
        got += trickling.recv(1)
    assert len(got) > 4


def test_a_whole_frame_before_the_deadline_is_read():
    ours, theirs = socket.socketpair()
    try:
        theirs.sendall(wire.pack({"ok": True}))
        assert wire.recv(ours, deadline=time.monotonic() + 30) == {"ok": True}
    finally:
        ours.close()
        theirs.close()


def _host_timer_ends_a_stalled_sandbox(tmp_path, wall_seconds, patience=30.0):
    """Open a sandbox whose host has its own timer, spawn a worker, then stall (as a pinned trusted side
    would): return whether the worker's channel was closed (the worker killed) within ``patience`` s."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "simple_attention.py").write_text("import time\n\ndef attention_scores(x, q):\n    time.sleep(1000)\n")
    with LocalZygote() as zygote:
        request = {"folder": str(folder), "scratch": str(tmp_path / "scratch"), "limits": {}}
        if wall_seconds:
            request["wall_seconds"] = wall_seconds
        sandbox = zygote.open(request)
        worker = sandbox.spawn({"modules": ["simple_attention"]}, tmp_path / "out", 1000.0)
        assert worker.request(None) == {"started": True}  # the worker's first word: confined
        worker.request(None)  # its hello: the submission imported, it is up
        worker.sock.settimeout(patience)
        start = time.monotonic()
        try:
            closed = worker.sock.recv(1) == b""  # nothing is asked of it: only a kill closes the channel
        except (TimeoutError, OSError):
            closed = False
        took = time.monotonic() - start
        worker.dead = True
        sandbox.close()
        return closed, took


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="forked hosts only")
def test_the_host_s_own_timer_kills_a_worker_nobody_is_waiting_for(tmp_path):
    closed, took = _host_timer_ends_a_stalled_sandbox(tmp_path, wall_seconds=1.0)
    assert closed and took < 25


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="forked hosts only")
def test_control_without_the_timer_the_worker_lives_on(tmp_path):
    closed, _ = _host_timer_ends_a_stalled_sandbox(tmp_path, wall_seconds=None, patience=4.0)
    assert not closed
