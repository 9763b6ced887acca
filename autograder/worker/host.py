"""A submission's host: confined once per submission, it forks one worker per step and ends it.

The zygote forks a host for each submission. The host enters the sandbox (with namespaces it becomes
PID 1 of the submission's PID namespace) and then, on the trusted side's requests:

* ``spawn`` (with a channel socket and an output file attached): fork a worker for one step, which
  drops to a uid of its own and serves that step's requests on the channel;
* ``end``: kill the step's worker and everything it started, reap them, empty the scratch directory,
  and answer how the worker ended (``exit N`` or ``signal NAME``).

The host itself never runs student code, so it stays trustworthy for the whole submission.
"""
from __future__ import annotations

import gc
import json
import os
import signal
import socket
import time

from . import child, sandbox


def describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    return f"exit {os.WEXITSTATUS(status)}"


def _reply(control: socket.socket, message: dict) -> None:
    control.sendall(json.dumps(message).encode("utf-8") + b"\n")


def run(control: socket.socket, request: dict, plan: sandbox.Plan) -> None:
    limits = request.get("limits", {})
    folder = sandbox.enter(request["folder"], plan, limits)  # with namespaces the watcher stays outside
    workdir = "/tmp/work" if plan.level == sandbox.NAMESPACES else request["scratch"]
    os.makedirs(workdir, mode=0o755, exist_ok=True)
    uid_base, spawned, current = int(request.get("uid_base", 0)), 0, None
    gc.freeze()  # see zygote.main: forked workers must not copy the host's heap by collecting it
    _reply(control, {"ready": True})
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 1 << 22, 2)
        except OSError:
            break
        if not message:
            break
        op = json.loads(message.decode("utf-8"))
        if op["op"] == "spawn":
            if current is not None:
                _end(plan, current, 0, workdir)
            uid = uid_base + spawned % 1000  # a fresh uid per worker (of this zygote's block): its own process count
            spawned += 1
            channel_fd, output_fd = fds
            host_pid = os.getpid()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the worker
                try:
                    sandbox.die_with(host_pid)
                    control.close()
                    spawn, step_limits = op["spawn"], {**limits, **op.get("limits", {})}
                    del message, op, fds, request  # the raw requests do not outlive the fork in a frame
                    sandbox.confine_step(plan, uid, output_fd, workdir, step_limits)
                    child.serve(socket.socket(fileno=channel_fd), folder, spawn, plan.shared_dirs())
                finally:
                    os._exit(0)
            os.close(channel_fd)
            os.close(output_fd)
            current = (pid, uid)
            _reply(control, {"ok": True})
        elif op["op"] == "end" and current is not None and not op.get("wait"):
            # A finished step: kill first, answer at once, tidy up while the trusted side judges.
            sandbox.kill_step(plan, *current)
            _reply(control, {"status": "killed"})
            _end(plan, current, 0, workdir)
            current = None
        elif op["op"] == "end":
            status = _end(plan, current, float(op.get("wait", 0)), workdir) if current else "gone"
            current = None
            _reply(control, {"status": status})
        else:
            break
    if current is not None:
        _end(plan, current, 0, workdir)
    os._exit(0)


def _end(plan: sandbox.Plan, current: tuple[int, int], wait: float, workdir: str) -> str:
    """End the step's worker: let it finish dying for up to ``wait`` s, then kill its whole tree."""
    pid, uid = current
    deadline = time.monotonic() + wait
    status = None
    while status is None:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = describe_status(raw)
        elif time.monotonic() >= deadline:
            break
        else:
            time.sleep(0.002)
    sandbox.kill_step(plan, pid, uid)
    if status is None:
        _, raw = os.waitpid(pid, 0)
        status = describe_status(raw)
    _reap_orphans(plan)
    if plan.level == sandbox.NAMESPACES:  # all of the sandbox's /tmp: nothing a step wrote reaches the next
        sandbox.clear("/tmp", keep=plan.under_tmp())
        os.makedirs(workdir, mode=0o755, exist_ok=True)
    else:
        sandbox.clear(workdir)
    return status


def _reap_orphans(plan: sandbox.Plan) -> None:
    """As PID 1, collect the step's killed daemons; outside a namespace, whatever children are left."""
    deadline = time.monotonic() + 2.0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if plan.level != sandbox.NAMESPACES or time.monotonic() > deadline:
                return
            time.sleep(0.001)
