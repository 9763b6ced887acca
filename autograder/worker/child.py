"""One worker: import the submission, serve the trusted side's requests for one step or more.

It first says ``{"started": True}`` (before any student code runs), then, once the submission is imported, which
of its modules failed to (``{"import_errors": ...}``).

Requests: ``{"op": "step"}`` starts a step (fresh random state); ``{"op": "standins", "standins": {...}}``
builds and substitutes stand-ins (for the steps graded last), and so does ``{"op": "step", "standins": {...}}``
before the step starts (one round trip instead of two); with ``"if_clean": true`` either does so
only if the worker is still as it was after import (hygiene.py), else answers what changed;
``{"op": "exit"}``; ``{"op": "batch", "n": k}`` is followed by k calls (the cases of one count), all read
before the first runs (a stand-in's call in the middle of one is answered on this channel), then run in turn,
each answered as soon as it is done, up to the first that fails (an error answer: the rest are dropped, and
the trusted side sends them again if the count goes on); anything else is a call for ``runtime.run``, whose
answer is sent only if the worker's own machinery is as it was before student code ran (integrity.py).
"""
from __future__ import annotations

import faulthandler
import os
import signal
import socket
import sys

from pathlib import Path

from . import asked_before, hygiene, integrity, limits, no_tracing, runtime, confine, reference_server, seal, seccomp, \
    signal_handlers_refused, submission, wire
from .errors import error, failed


def serve(channel: socket.socket, folder: str, spawn: dict, shared: tuple[str, ...] = (),
          stack_fd: int | None = None) -> None:
    """Serve one step or more: the host has confined this process already.

    What this loop calls after student code has run (``run``, ``send``, the integrity check) is bound to
    locals here, before the submission is imported: a frame walk can read this frame's locals but not
    rebind them. Stand-ins arrive on this channel as a list of steps (``standins`` op): they are proxies whose
    code runs in the reference worker (``standins.py``), reached through the trusted side on this channel.
    """
    if spawn.get("reference"):  # the reference worker: no submission here, ever
        return reference_server.serve(channel)
    if stack_fd is not None:  # before any student code: where it is when its time runs out (workers.stopped_at)
        try:
            os.write(stack_fd, f"folder: {folder}\n".encode("utf-8", "replace"))
            faulthandler.register(signal.SIGUSR2, file=stack_fd, all_threads=True, chain=False)
        except (OSError, ValueError, RuntimeError):
            pass  # no location is said, never a wrong one
    folder = Path(folder)
    run, recv, WireError, limit_hit = runtime.run, wire.recv, wire.WireError, limits.hit
    # what the worker sends, always made by seal.pack (nothing in it can be rebound) and written by the channel's own
    # method, both bound here, before any student code runs
    recv_frame, unpack, pack, write = wire.recv_frame, wire.unpack, seal.pack, channel.sendall
    failed_, error_ = failed, error  # an error answer's makers: looked up now, not once student code has run

    # A stand-in's call, answered by the reference worker through the trusted side (which checks it), or as then if
    # this worker asked it before
    call = asked_before.through(channel)

    watched = integrity.watched(__package__)
    # before any student code: no trace function can reach this loop's frames, nor new defaults our functions
    no_tracing.install(integrity.functions(watched))
    cells = integrity.cells(watched)
    check = integrity.snapshot
    check_code, check_defaults = check.__code__, check.__defaults__
    # The grader's own modules stay loaded but are not findable by name from student code.
    for name in [n for n in sys.modules if n[:1] == "a" and n.startswith(("attention_worker", "autograder"))]:
        del sys.modules[name]
    machinery = check(watched, cells)
    # The first frame, written before any student code runs here: a worker that ends before it failed in the
    # grader's own start (its confinement, the checks above), never in the student's code (runner.py reads it).
    write(pack(wire.STARTED))
    own_handlers = runtime.handlers()  # the worker's signal handlers: any other is ignored on an answer's way out
    seccomp.no_signal_handlers()  # and where a filter can be installed, no other can be set at all
    signal_handlers_refused.install()  # everywhere, in words: the same verdict where no filter can be
    modules, errors = submission.load(folder, spawn["modules"])
    ws = runtime.prepare(folder, modules)
    baseline = hygiene.fingerprint(modules, shared)
    write(pack({"import_errors": errors}))
    # A batch's calls, kept as the bytes they came in (immutable) and decoded one at a time: the code of one call
    # cannot change a later one (a tuple and an int, bound in this frame, which student code cannot rebind).
    batch, at = (), 0
    while True:
        try:
            if at < len(batch):
                request, at = unpack(*batch[at]), at + 1
            else:
                request = recv(channel)
                if type(request) is dict and request.get("op") == "batch":
                    batch = tuple(recv_frame(channel) for _ in range(int(request["n"])))
                    request, at = unpack(*batch[0]), 1
        except WireError:
            return
        except MemoryError as exc:  # what the step's code holds left no room to read the request: its limit
            try:
                write(pack(failed_({**error_("MemoryError", ""), **(limit_hit(exc) or {})}, "reading the request")))
            except BaseException:  # noqa: BLE001 - no room to answer either: the worker's end says the rest
                pass
            return
        if request.get("op") == "exit":
            return
        if request.get("op") in ("step", "standins"):
            # A worker that served a step serves another only if it is still as it was after import.
            now = hygiene.fingerprint(modules, shared) if request.get("if_clean") else None
            changed = hygiene.changes(baseline, now) if now is not None else []
            cpu_seconds = request.get("cpu_seconds")
            if not changed and "standins" in request:  # the stand-ins this step may hold (grading/dependencies.py), built and substituted
                ws.add_standins(request.pop("standins"), call)
                # what substituting them changed: the student's modules' globals (the rest is as just found)
                baseline = hygiene.with_modules(now, modules) if now is not None else hygiene.fingerprint(modules, shared)
            if not changed and request["op"] == "step":  # a step begins: the same random state for every step
                hygiene.fresh_random_state()
            request.clear()
            if not changed and cpu_seconds:  # this step's CPU budget, from now
                confine.renew_cpu(float(cpu_seconds))
            write(pack({"changed": changed}))
            continue
        ok, sealed = run(request, ws, pack, own_handlers)  # the answer's bytes, made before any finalizer of the student's could run
        if not ok:
            batch, at = (), 0  # the count fails here (or expects this error): the trusted side sends what it needs next
        if check.__code__ is not check_code or check.__defaults__ is not check_defaults \
                or not check(watched, cells, machinery):
            write(pack(failed_(error_("Tampering", "your code changed the grader's own functions while it ran: "
                                                      "this step scores zero"), "the step", tampered=True)))
            return  # retired: the next step gets a fresh worker
        write(sealed)
        for stream in (sys.stdout, sys.stderr):  # after the answer is out: what it printed, for grade check
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - the student's own stream
                pass
