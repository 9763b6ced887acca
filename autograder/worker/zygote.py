"""The zygote: a process that has imported torch once and forks one host per submission.

It is started by the trusted side with the real interpreter (``sys.executable -I -S``), so it never
sees the reference solutions or the hidden suites: its ``sys.path`` holds the interpreter's
site-packages and nothing of the instructor's repository but this package.

Control channel (a Unix socket inherited as a file descriptor): the zygote first says which isolation
level the machine allows; then the trusted side sends a JSON ``open`` request with one end of a fresh
socket pair attached (SCM_RIGHTS); the zygote forks a host for that submission (``host.py``), which
serves the trusted side on that socket, and answers ``{"pid": ...}``. A ``clone`` request forks a copy of
the zygote itself, serving the attached socket: a batch job's own zygote, without a second ``import torch``.
"""
from __future__ import annotations

import gc
import os
import socket
import time
import traceback

import torch

from . import cgroups, child, host, protocol, confine, reference_server, tempdirs, waits
from .isolation import Level
from . import syscalls as sc
from .warm_up import warm_up


def serve_worker(channel: socket.socket, folder: str, spawn: dict, *args, **kwargs) -> None:
    """A worker of this zygote's hosts: the reference worker (``reference_server.py``: no submission there, ever),
    which only a grader holding the reference asks for, or a submission's (``child.serve``). ``grade check``'s own
    zygote (``sandbox/local_zygote.py``) serves submissions only: the student's bundle holds no reference server."""
    if spawn.get("reference"):
        return reference_server.serve(channel)
    return child.serve(channel, folder, spawn, *args, **kwargs)


def main(control_fd: int, uid_base: int = 0, site_dirs: list[str] | None = None,
         most: str = Level.NAMESPACES, scan: tuple[int, int] | None = None) -> None:
    """``scan``: the search for world-writable folders, started before ``import torch`` (_BOOT)."""
    torch.set_num_threads(1)
    warm_up()
    control = socket.socket(fileno=control_fd)
    plan = confine.plan_for_zygote(uid_base, site_dirs or [], most=Level(most), scan=scan)
    # Everything loaded so far lives as long as we do: keep the collector from walking (and so
    # copying, page by page) all of it in every forked child. It was paused while torch loaded (_BOOT in
    # sandbox/zygote.py): each of its full passes then walked all of torch again.
    gc.freeze()
    gc.enable()
    zygote = Zygote(plan)
    zygote.serve(control)
    zygote.wait_for_clones()
    zygote.drop_groups(wait=2.0)
    cgroups.release(plan.groups)
    if plan.root_dir:
        try:
            tempdirs.remove_empty(plan.root_dir)  # the namespaces' mount point: empty out here
        except OSError:
            pass
    os._exit(0)


class Zygote:
    """One zygote's state, held in one place (a clone starts with one of its own, on the same plan).

    ``plan``: what confines the workers, decided once at start-up. ``clones``: the copies forked for other
    batch jobs, reaped before this zygote exits. ``finished``: how recently ended children ended, kept until
    the trusted side asks (it asks only after a death). ``ended_hosts``: hosts reaped whose control group
    may still need removing.
    """

    def __init__(self, plan: confine.Plan) -> None:
        self.plan = plan
        self.clones: set[int] = set()
        self.finished: dict[int, dict] = {}
        self.ended_hosts: set[int] = set()

    def serve(self, control: socket.socket) -> None:
        """Say the isolation level, then answer ``open``, ``clone``, ``reap`` and ``quit`` until told to stop."""
        plan = self.plan
        # Orphans (a killed host's confined half) come back to us to be reaped.
        sc.prctl(sc.PR_SET_CHILD_SUBREAPER, 1)
        protocol.reply(control, {"isolation": plan.describe(), "level": plan.level})
        while True:
            request, fds = protocol.receive(control, 4)
            if request is None:
                break
            self.reap_finished()
            self.drop_groups()
            if request.get("op") == "quit":
                break
            if request.get("op") == "reap":
                protocol.reply(control, {"status": self.reap(int(request["pid"]))})
                continue
            channel_fd = fds[0]
            me = os.getpid()
            pid = os.fork()
            if pid == 0:
                try:
                    sc.die_with_parent(me)  # a clone or a host never outlives its zygote
                    control.close()
                    if request.get("op") == "clone":  # a copy of this zygote for another batch job
                        # its own state: our clones and children are ours, our hosts' groups ours to remove
                        clone = Zygote(plan)
                        if plan.network_cut:  # its own network (abstract sockets), IPC and host name, as ours
                            sc.unshare(sc.CLONE_NEWNET | sc.CLONE_NEWIPC | sc.CLONE_NEWUTS)
                        clone.serve(socket.socket(fileno=channel_fd))
                        clone.wait_for_clones()
                    else:
                        host.run(socket.socket(fileno=channel_fd), request, plan, serve=serve_worker)
                except BaseException:  # noqa: BLE001 - a bug of ours: say so on the grader's stderr
                    traceback.print_exc()
                    os._exit(70)
                finally:
                    os._exit(0)
            os.close(channel_fd)
            if request.get("op") == "clone":
                self.clones.add(pid)
            protocol.reply(control, {"pid": pid})

    def wait_for_clones(self, seconds: float = 10.0) -> None:
        """Give each clone time to wind down (its own channel says quit), then kill what is left."""
        deadline = time.monotonic() + seconds
        for pid in list(self.clones):
            if pid in self.finished or waits.reap(pid, max(0.0, deadline - time.monotonic())) != protocol.RUNNING:
                self.clones.discard(pid)
        for pid in self.clones:
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

    def reap_finished(self) -> None:
        """Collect every child that has ended, so none lingers as a zombie; remember how it ended."""
        for pid, status in waits.ended_children():
            self.finished[pid] = protocol.ended(status)
            self.ended_hosts.add(pid)
            if len(self.finished) > 4096:
                self.finished.pop(next(iter(self.finished)))

    def drop_groups(self, wait: float = 0.0) -> None:
        """Remove the control groups of hosts that have ended (retried until their processes are gone)."""
        groups = self.plan.groups
        if not groups.usable:
            self.ended_hosts.clear()
            return
        deadline = time.monotonic() + wait
        while self.ended_hosts:
            for pid in list(self.ended_hosts):
                if groups.remove(self.plan.group_name(pid)):
                    self.ended_hosts.discard(pid)
            if not self.ended_hosts or time.monotonic() >= deadline:
                return
            time.sleep(0.01)

    def reap(self, pid: int) -> dict:
        """Wait (up to 1 s) for a killed or finished host and say how it ended."""
        if pid in self.finished:
            return self.finished.pop(pid)
        status = waits.reap(pid, 1.0)
        if status == protocol.GONE:
            return self.finished.pop(pid, protocol.GONE)
        if status != protocol.RUNNING:
            self.ended_hosts.add(pid)
        return status
