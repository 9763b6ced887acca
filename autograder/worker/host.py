"""A submission's host: confined once per submission, it forks one worker per step and ends it.

The zygote forks a host for each submission. The host enters the sandbox (with namespaces it becomes
PID 1 of the submission's PID namespace) and then, on the trusted side's requests:

* ``spawn`` (with a channel socket and an output file attached): fork a worker for one step, which
  drops to a uid of its own and serves that step's requests on the channel;
* ``end``: kill the step's worker and everything it started, reap them, empty the scratch directory,
  and answer how the worker ended (``protocol.ended``: the exit code or the signal, as data).

The host itself never runs student code, so it stays trustworthy for the whole submission.
"""
from __future__ import annotations

import gc
import os
import shutil
import signal
import socket
import time

from . import child, confine, locks, protocol, tempdirs, waits


def within_block(plan: confine.Plan, uid_base: int, uid_count: int) -> bool:
    """Whether the uids a request asks workers to run as lie in one block of the kit's own uid range
    (``locks.FIRST_UID`` on): never root's, never a user's of the machine. What asks may hold less than root (a Dask
    worker that dropped it): the zygote decides. Which block is the trusted side's to claim (``sandbox/uids.py``)."""
    if not plan.level.own_uids:
        return True  # its workers keep the zygote's own uid
    first, last = uid_base - locks.FIRST_UID, uid_base + uid_count - 1 - locks.FIRST_UID
    return 0 <= first and last < locks.BLOCKS * locks.BLOCK and first // locks.BLOCK == last // locks.BLOCK


def run(control: socket.socket, request: dict, plan: confine.Plan, serve=child.serve) -> None:
    """Serve the trusted side's requests for one submission; each spawned worker runs ``serve`` (``child.serve``;
    the separate zygote's hosts may also start the reference worker: ``zygote.serve_worker``)."""
    tempdirs.close_inherited()  # the zygote's folder locks: no worker (student code) may hold or release them
    limits = request.get("limits", {})
    uid_base, spawned, current = int(request.get("uid_base", 0)), 0, None
    uid_count = max(1, int(request.get("uids", 1000)))  # sandbox/uids.py: which uids of the block are ours
    if not within_block(plan, uid_base, uid_count):
        protocol.reply(control, {"error": f"uids {uid_base}+{uid_count} are not this grader's block"})
        os._exit(2)
    # the step's scratch folder, made here (never a path the request names: the host chowns it to a worker's uid)
    scratch = None if plan.level.namespaced else tempdirs.make("grade-work-", mode=0o711)
    folder = confine.enter(request["folder"], plan, limits)  # with namespaces the watcher stays outside
    if plan.level.namespaced:  # PID 1: a signal from a worker (under userns, of the same uid) is not delivered to
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a handler-less init, and Python's own is one
    workdir = "/tmp/work" if scratch is None else str(scratch / "work")
    os.makedirs(workdir, mode=0o755, exist_ok=True)
    # uid+rlimits: a uid that owns a file or a process serves no one (only ours: the reference worker's is not)
    dirty = confine.dirty_uids(plan, uid_base, uid_count)
    gc.freeze()  # see zygote.main: forked workers must not copy the host's heap by collecting it
    # A timer of our own besides the trusted side's deadlines: past the submission's wall-clock budget (and a
    # margin), whatever the trusted side is doing, the step's worker is killed and the sandbox ends.
    wall = request.get("wall_seconds")
    ends = time.monotonic() + float(wall) if wall else None
    protocol.reply(control, {"ready": True})
    while True:
        if ends is not None:
            control.settimeout(max(ends - time.monotonic(), 0.001))
        op, fds = protocol.receive(control, 3)
        if op is None:
            break
        if op["op"] == "spawn":
            if current is not None:
                _end(plan, current, 0, workdir)
            channel_fd, output_fd, *rest = fds
            stack_fd = rest[0] if rest else None  # where the worker's stack is dumped on SIGUSR2 (child.py)
            if len(dirty) >= uid_count:
                for fd in fds:
                    os.close(fd)
                protocol.reply(control, {"ok": False, "error": (
                    "the grading machine could not give this step a clean user id: every uid of the grader's block "
                    f"still owns a file or a process (e.g. uid {min(dirty)}: {dirty[min(dirty)][:3]}); not a fault "
                    "of your code")})
                continue
            # a fresh uid per worker (of this zygote's block): its own process count
            uid = uid_base + spawned % uid_count
            spawned += 1
            while uid in dirty:
                uid = uid_base + spawned % uid_count
                spawned += 1
            host_pid = os.getpid()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the worker
                try:
                    confine.die_with(host_pid)
                    control.close()
                    tempdirs.close_inherited()  # the host's lock on its scratch folder: never a worker's to release
                    spawn, step_limits = op["spawn"], {**limits, **op.get("limits", {})}
                    del op, fds, request  # the requests do not outlive the fork in a frame
                    confine.confine_step(plan, uid, output_fd, workdir, step_limits, folder)
                    serve(socket.socket(fileno=channel_fd), folder, spawn, plan.shared_dirs(), stack_fd=stack_fd)
                finally:
                    os._exit(0)
            os.close(channel_fd)
            os.close(output_fd)
            if stack_fd is not None:
                os.close(stack_fd)
            current = (pid, uid)
            protocol.reply(control, {"ok": True})
        elif op["op"] == "dump":  # the step's time ran out: its worker writes its stack (child.py), then is ended
            try:
                os.kill(current[0], signal.SIGUSR2) if current is not None else None
                protocol.reply(control, {"ok": current is not None})
            except ProcessLookupError:
                protocol.reply(control, {"ok": False})
        elif op["op"] == "end" and current is not None and not op.get("wait"):
            # A finished step: kill first, answer at once, tidy up while the trusted side judges.
            confine.kill_step(plan, *current)
            protocol.reply(control, {"status": {"state": "killed"}})
            _end(plan, current, 0, workdir)
            current = None
        elif op["op"] == "end":
            status = _end(plan, current, float(op.get("wait", 0)), workdir) if current else protocol.GONE
            current = None
            protocol.reply(control, {"status": status})
        else:
            break
    if current is not None:
        _end(plan, current, 0, workdir)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    os._exit(0)


def _end(plan: confine.Plan, current: tuple[int, int], wait: float, workdir: str) -> dict:
    """End the step's worker: let it finish dying for up to ``wait`` s, then kill its whole tree."""
    pid, uid = current
    status = waits.reap(pid, wait)
    confine.kill_step(plan, pid, uid)
    if status == protocol.RUNNING:
        status = protocol.ended(os.waitpid(pid, 0)[1])
    _reap_orphans(plan)
    if plan.level.namespaced:  # all of the sandbox's /tmp: nothing a step wrote reaches the next
        confine.clear("/tmp", keep=plan.under_tmp())
        os.makedirs(workdir, mode=0o755, exist_ok=True)
    else:
        confine.clear(workdir)
    return status


def _reap_orphans(plan: confine.Plan) -> None:
    """As PID 1, collect the step's killed daemons (all SIGKILLed: a blocking wait ends at once); outside a
    namespace, whatever children have already ended."""
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if plan.level.namespaced else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
