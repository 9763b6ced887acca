"""One worker: import the submission, serve the trusted side's requests for one step or more.

This process runs the student's code, so it is the student's: whatever it sends is a claim, which the trusted side
judges by what it can verify (values and gradients it compares, the argument buffers it owns) and never by this
process's word (docs/isolation.md). So nothing here defends itself against the code it imports: what keeps a forged
answer from earning points is on the other side of the channel.

It first says ``{"started": True}`` (before any student code runs), then, once the submission's package is set up
(its ``__init__.py`` run, if it has one), what failed (``{"import_errors": ...}``) and the warnings compiling it raised
(``"warnings"``). It imports a module of the unit only when a step asks for it (``submission.py``): the step's own
module, and what that module imports, saying the same of it in the step's answer.

Requests: ``{"op": "step"}`` starts a step (fresh random state); ``{"op": "standins", "standins": {...}}``
builds and substitutes stand-ins (for the steps graded last), and so does ``{"op": "step", "standins": {...}}``
before the step starts (one round trip instead of two); ``"import": MODULE`` then imports that module (after the
stand-ins are built, so that a module it imports which fails is replaced by what it should provide), and the answer
says which modules did not import and which of a notebook's cells raised (``cell_errors``); with ``"if_clean":
true`` either does so only if the worker is still as it was after import (hygiene.py), else answers what changed;
``{"op": "exit"}``; ``{"op": "batch", "n": k}`` is followed by k calls (the cases of one count), all read
before the first runs (a stand-in's call in the middle of one is answered on this channel), then run in turn,
each answered as soon as it is done, up to the first that fails (an error answer: the rest are dropped, and
the trusted side sends them again if the count goes on); anything else is a call for ``runtime.run``. A call's
frame may come with a descriptor attached: the buffer that holds its tensor arguments (argument_buffer.py).
"""
from __future__ import annotations

import faulthandler
import os
import signal
import socket
import sys

from pathlib import Path

from . import argument_buffer, asked_before, confine, hygiene, importable, ipython_shell, runtime, submission, \
    warnings_seen, wire
from . import standins as standins_mod
from .errors import error, failed


def serve(channel: socket.socket, folder: str, spawn: dict, shared: tuple[str, ...] = (),
          stack_fd: int | None = None) -> None:
    """Serve one step or more: the host has confined this process already. Stand-ins arrive on this channel as a
    list of steps (``standins`` op): they are proxies whose code runs in the reference worker (``standins.py``),
    reached through the trusted side on this channel."""
    if stack_fd is not None:  # before any student code: where it is when its time runs out (host.stopped_at)
        try:
            os.write(stack_fd, f"folder: {folder}\n".encode("utf-8", "replace"))
            faulthandler.register(signal.SIGUSR2, file=stack_fd, all_threads=True, chain=False)
        except (OSError, ValueError, RuntimeError):
            pass  # no location is said, never a wrong one
    folder = Path(folder)
    # A stand-in's call, answered by the reference worker through the trusted side (which checks it), or as then if
    # this worker asked it before
    call = asked_before.through(channel)
    # The grader's own modules stay loaded but are not findable by name from student code.
    for name in [n for n in sys.modules if n.startswith(("attention_worker", "autograder"))]:
        del sys.modules[name]
    # The first frame, written before any student code runs here: a worker that ends before it failed in the
    # grader's own start (its confinement), never in the student's code (grading/runner.py reads it).
    channel.sendall(wire.pack(wire.STARTED))
    ipython_shell.install()  # get_ipython(), display(), input(): as in the kernel the notebook ran in
    importable.install()  # the packages installed wherever code is graded, and no other (importable.py)
    with warnings_seen.collecting(folder) as warned:  # Python's words about the student's files as they compile
        student = submission.Submission(folder, spawn["modules"], spawn.get("notebooks", ()), spawn.get("refused", ()))
    modules = student.modules  # the unit's modules imported so far: filled as steps ask for them
    ws = runtime.prepare(folder, modules)
    student.standins = ws.standins
    baseline = hygiene.fingerprint(modules, shared)
    held = hygiene.resident_bytes()  # what a fresh worker holds: one holding much more goes on to no other module
    channel.sendall(wire.pack({"import_errors": student.errors, "warnings": warned}))
    batch: list[tuple[bytes, bytes, list[int]]] = []
    while True:
        try:
            if batch:
                header, blob, fds = batch.pop(0)
            else:
                header, blob, fds = wire.recv_frame_and_fds(channel)
            request = wire.unpack(header, blob)
            if type(request) is dict and request.get("op") == "batch":
                batch = [wire.recv_frame_and_fds(channel) for _ in range(int(request["n"]))]
                continue
        except wire.WireError:
            return
        except MemoryError:  # what the step's code holds left no room to read the request
            try:
                channel.sendall(wire.pack(failed(error("MemoryError", ""), "reading the request")))
            except BaseException:  # noqa: BLE001 - no room to answer either: the worker's end says the rest
                pass
            return
        if request.get("op") == "exit":
            return
        if request.get("op") in ("step", "standins"):
            # A worker that served a step serves another only if it is still as it was after import.
            now = hygiene.fingerprint(modules, shared) if request.get("if_clean") else None
            changed = hygiene.changes(baseline, now) if now is not None else []
            if now is not None and request.get("import") and hygiene.holds_much(held):
                changed.append("memory held by the modules imported before")
            if not changed and request.get("cpu_seconds"):  # this step's CPU budget, from now
                confine.renew_cpu(float(request["cpu_seconds"]))
            if not changed and "standins" in request:  # the stand-ins this step may hold (grading/dependencies.py)
                ws.add_standins(request["standins"], call)
                # what substituting them changed: the student's modules' globals (the rest is as just found)
                baseline = (hygiene.with_modules(now, modules) if now is not None
                            else hygiene.fingerprint(modules, shared))
            reply = {"changed": changed}
            if not changed and request.get("import"):  # the step's module: its code runs now, in this step's time
                with warnings_seen.collecting(folder) as warned:
                    student.import_module(str(request["import"]))
                standins_mod.substitute(modules, ws.standins)
                baseline = hygiene.fingerprint(modules, shared)
                reply.update(import_errors=student.errors, cell_errors=student.cell_errors, warnings=warned)
            if not changed and request["op"] == "step":  # a step begins: the same random state for every step
                hygiene.fresh_random_state()
            channel.sendall(wire.pack(reply))
            continue
        buffer = argument_buffer.Buffer(fds[0]) if fds else None
        for extra in fds[1:]:
            os.close(extra)
        answer = runtime.run(request, ws, buffer)
        del buffer  # the call's tensors keep its mapping for as long as they live
        try:
            frame = wire.pack(answer)
        except BaseException as exc:  # noqa: BLE001 - something the student's call returned cannot be sent
            frame = wire.pack(failed(error(type(exc).__name__, str(exc)), "returning the result"))
            answer = {"ok": False}
        if answer.get("ok") is not True:
            batch = []  # the count fails here (or expects this error): the trusted side sends what it needs next
        channel.sendall(frame)
        for stream in (sys.stdout, sys.stderr):  # after the answer is out: what it printed, for grade check
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - the student's own stream
                pass
