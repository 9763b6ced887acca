"""Talk to one submission's host and to the per-step workers it forks.

Each step of each submission gets a forked worker (reused for the next step only while it stays clean,
``worker/hygiene.py``), so a crash, a monkeypatch or a changed RNG state in one step cannot reach another.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from autograder.worker import protocol, wire

from . import answers, argument_buffer
from .per_request import PerRequest


class Reaper(Protocol):
    """What a sandbox needs of the zygote that forked its host (``zygote.py``)."""

    def reap(self, pid: int) -> dict: ...


#: each request packed once, its tensor arguments inline: for a worker no descriptor can be handed to
_inline = PerRequest(wire.pack)


#: the answer to a stand-in's call where there are none (``grade check``, or a step that may hold none)
_NO_STANDINS = wire.pack({"ok": False, "error": {"type": "RuntimeError", "message": "no stand-in may run here"}})


def time_limit_hit(budget: float, where: str | None = None) -> str:
    """What a student reads when a step's time ran out: where their code was, when its stack could be read
    (``stopped_at``), else only that it was still running."""
    at = f"your code was at {where} when it was stopped" if where else "your code was still running when it was stopped"
    return (f"the time limit of {budget:g} s for this step was hit: {at} (an endless loop, or far more work than the "
            "step needs?)")


#: how long the trusted side waits for a worker's stack dump (SIGUSR2, faulthandler) before killing it
DUMP_WAIT = 0.5
_THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-f]+", re.M)
_FRAME = re.compile(r'^\s+File "([^"\n]+)", line (\d+) in ([\w<>.]+)\s*$', re.M)


def stopped_at(dump: str) -> str | None:
    """"file.py, line N, in f": the innermost frame of the student's own files in a worker's stack dump.

    ``dump`` is what ``child.serve`` wrote first (``folder: PATH``, the submission's folder as the worker
    sees it) and then what ``faulthandler`` wrote on SIGUSR2 (every thread, most recent call first). The
    step's thread is the one that runs the grader's ``serve`` loop; None when no dump came (the student
    replaced or unregistered the handler) or no frame of that thread is in the student's files.
    """
    head, _, rest = dump.partition("\n")
    if not head.startswith("folder: ") or not rest:
        return None
    folder = head.removeprefix("folder: ").rstrip("/") + "/"
    starts = [m.start() for m in _THREAD.finditer(rest)]
    blocks = [rest[a:b] for a, b in zip(starts, starts[1:] + [len(rest)])]
    serving = [b for b in blocks if any(f.group(3) == "serve" and f.group(1).endswith("child.py")
                                        for f in _FRAME.finditer(b))]
    for frame in _FRAME.finditer(serving[-1] if serving else ""):  # the last dump, if several
        path, line, function = frame.groups()
        if path.startswith(folder) and ".." not in path:
            return f"{path[len(folder):]}, line {line}, in {function}"
    return None


#: what a step scores when the answers on the worker's channel are not answers a worker makes
PROTOCOL = ("your code wrote its own messages on the grader's channel to the worker, so none of this step's "
            "answers can be trusted: this step scores zero")


class WorkerError(Exception):
    """The worker died, hung, or broke the protocol while serving a step."""

    def __init__(self, reason: str, limit: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.limit = limit  # which limit was hit, if one was


class Sandbox:
    """The trusted side's handle on one submission's host: spawn a worker per step, end it."""

    def __init__(self, control: socket.socket, pid: int, zygote: Reaper):
        self.control = control
        self.pid = pid
        self.zygote = zygote
        self.dead = False
        self._reader = control.makefile("rb")
        ready = self._ask(None, 30)  # the host says it is ready once confined, or why it refused the request
        if ready.get("error"):
            self.close()
            raise WorkerError(str(ready["error"]))

    def _ask(self, message: dict | None, timeout: float, fds: list[int] = ()) -> dict:
        if self.dead:
            raise WorkerError("the submission's sandbox is gone")
        try:
            self.control.settimeout(timeout)
            if message is not None:
                protocol.request(self.control, message, fds)
            answer = protocol.answer(self._reader)
        except OSError:
            answer = None
        if answer is None:
            self.close()
            raise WorkerError("the submission's sandbox stopped answering")
        return answer

    def spawn(self, spawn: dict, output: Path, budget: float, total: float | None = None,
              callbacks: Callable[[dict, bytes, float], bytes] | None = None) -> "Worker":
        """A worker for one step (``budget`` seconds of CPU), or several in turn (``total``: at most, in all)."""
        ours, theirs = socket.socketpair()
        out = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        # where the worker's stack goes when its time runs out (faulthandler on SIGUSR2): apart from what it prints
        stack = output.with_name(output.name + ".stack")
        dump = os.open(stack, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        limits = {"cpu_seconds": budget, "cpu_total_seconds": total or budget}
        try:
            answer = self._ask({"op": "spawn", "spawn": spawn, "limits": limits}, 30, [theirs.fileno(), out, dump])
        finally:
            theirs.close()
            os.close(out)
            os.close(dump)
        if answer.get("error"):  # the machine's fault (the host says why), never the student's
            ours.close()
            raise WorkerError(answer["error"])
        return Worker(ours, self, budget, callbacks=callbacks, stack=stack)

    def dump(self) -> bool:
        """Ask the host to send SIGUSR2 to the step's worker: its stack, written by faulthandler (``child.py``)."""
        try:
            return bool(self._ask({"op": "dump"}, 5).get("ok"))
        except WorkerError:
            return False

    def end(self, wait: float = 0.0) -> dict:
        """Kill the current step's worker and all it started; say how the worker had ended (``protocol.ended``)."""
        try:
            return self._ask({"op": "end", "wait": wait}, wait + 10)["status"]
        except WorkerError:
            return protocol.GONE

    def close(self) -> None:
        if self.dead:
            return
        self.dead = True
        try:
            protocol.request(self.control, {"op": "quit"})
        except OSError:
            pass
        self.control.close()
        if self.zygote.reap(self.pid) == protocol.RUNNING:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.zygote.reap(self.pid)


@dataclass
class Worker:
    """One forked worker serving one step; every request shares the step's time budget."""

    sock: socket.socket
    sandbox: Sandbox
    budget: float
    started: float = field(default_factory=time.monotonic)
    dead: bool = False
    status: dict | None = None  # how it ended (protocol.ended)
    #: answers a stand-in's call made while a request is served: ``callbacks(call, blob, deadline) -> frame``
    callbacks: Callable[[dict, bytes, float], bytes] | None = None
    #: the file the worker's stack is dumped into on SIGUSR2 (``stopped_at``), None for none
    stack: Path | None = None
    #: the unit's steps: the only ones a worker's answer may say are missing (``answers.taken``)
    steps: frozenset = frozenset()
    #: the calls sent whose answers are not read yet, in order, each with its argument buffer (or None)
    handed: list = field(default_factory=list)
    #: how a place in the student's files is said to them (``runner.place``: a notebook's cell), where it is known
    place: Callable[[str], str] | None = None
    #: where the student's code was when the time ran out (``where``), as said to them, if it could be read
    stopped_where: str | None = None

    def __post_init__(self) -> None:
        # where descriptors can be handed over (a Unix socket), a call's tensor arguments go in a buffer of ours
        self.buffers = self.sock.family == getattr(socket, "AF_UNIX", None) and hasattr(socket, "send_fds")

    def remaining(self) -> float:
        return self.budget - (time.monotonic() - self.started)

    def begin(self, budget: float) -> None:
        """A new step on this worker: a fresh time budget."""
        self.started, self.budget = time.monotonic(), budget

    def deadline(self) -> float:
        return self.started + self.budget

    def request(self, message: dict | None = None, deadline: float | None = None):
        """Send ``message`` (a call, or a control request; or only read the next answer, when None) and return the
        worker's answer; a call's, as the trusted side takes it (``answers.taken``).

        One wall-clock deadline (the step's, unless given) covers the whole exchange: every read of every
        frame, and the stand-in calls the worker makes meanwhile (``{"$callback": ...}``, answered by
        ``callbacks``). A worker still busy then is killed, whatever it is doing.
        """
        if message is None:
            return self._answer(None, deadline)
        if "kind" in message:
            return self._answer(self._calls([message]), deadline)
        return self._answer([(wire.pack(message), None)], deadline)

    def batch(self, requests: list[dict], deadline: float | None = None):
        """Send several calls at once (``{"op": "batch", "n": k}``, then each call's frame) and return the
        first one's answer; the others' come with ``request()``, in order, up to the first error answer (the
        worker drops the rest of the batch after it). The deadline is the same as for single requests."""
        return self._answer([(wire.pack({"op": "batch", "n": len(requests)}), None), *self._calls(requests)], deadline)

    def _calls(self, requests: list[dict]) -> list[tuple[bytes, int | None]]:
        """Each call's frame, with the descriptor of its argument buffer (``argument_buffer.py``) where it has one."""
        sends = []
        for request in requests:
            if not self.buffers:
                self.handed.append((request, None))
                sends.append((_inline(request), None))
                continue
            call = argument_buffer.prepared(request)
            handed = argument_buffer.Handed(call) if call.data is not None else None
            self.handed.append((request, handed))
            sends.append((call.frame, handed.fd if handed is not None else None))
        return sends

    def _answer(self, sends: list[tuple[bytes, int | None]] | None, deadline: float | None):
        header, blob, _ = self.exchange(sends, deadline)
        try:
            answer = wire.unpack(header, blob)
        except wire.WireError as exc:
            self.kill(wait=0.5)
            raise WorkerError(self._death_reason(exc), limit=self._limit()) from None
        if not self.handed:  # a control request's answer: checked by its caller
            return answer
        request, handed = self.handed.pop(0)
        modified = handed.modified() if handed is not None else ([] if self.buffers else None)
        try:
            taken = answers.taken(answer, request, modified, self.steps)
        except answers.NotAnAnswer:
            self.kill()
            raise WorkerError(PROTOCOL) from None
        if not taken["ok"]:  # the worker drops the rest of its batch after an error answer
            self.forget()
        return taken

    def forget(self) -> None:
        """The calls sent whose answers will not come (or will not be read): their buffers let go of."""
        for _request, handed in self.handed:
            if handed is not None:
                handed.close()
        self.handed.clear()

    def exchange(self, sends: bytes | list[tuple[bytes, int | None]] | None,
                 deadline: float | None = None) -> tuple[bytes, bytes, object]:
        """Send packed frames (each with the descriptor it hands over, or None), a frame, or nothing, and return the
        answer's header, blob and parsed header, with the stand-in calls made meanwhile answered (relayed undecoded:
        ``callbacks(call, blob, deadline)``)."""
        if self.dead:
            raise WorkerError("the worker for this step is gone")
        deadline = self.deadline() if deadline is None else deadline
        if deadline - time.monotonic() <= 0:
            self.kill()
            raise WorkerError(time_limit_hit(self.budget), limit="time")
        if isinstance(sends, bytes):
            sends = [(sends, None)]
        try:
            for frame, fd in sends or ():
                self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
                wire.send_with_fd(self.sock, frame, fd)
            while True:
                header, blob = wire.recv_frame(self.sock, deadline)
                parsed = wire.parse(header)
                if type(parsed) is not dict or "$callback" not in parsed:
                    return header, blob, parsed
                try:
                    reply = self.callbacks(parsed["$callback"], blob, deadline) if self.callbacks else _NO_STANDINS
                except Exception as exc:  # noqa: BLE001 - a call no honest proxy makes: the protocol is broken
                    raise wire.WireError(f"a malformed stand-in call ({type(exc).__name__})") from None
                self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
                self.sock.sendall(reply)
        except (socket.timeout, TimeoutError):
            where = self.where()
            if where and self.place is not None:
                where = self.place(where)
            self.stopped_where = where
            self.kill()
            raise WorkerError(time_limit_hit(self.budget, where), limit="time") from None
        except (wire.WireError, OSError) as exc:
            # The worker is dying on its own: give it a moment, so its own exit status says why.
            self.kill(wait=0.5)
            raise WorkerError(self._death_reason(exc), limit=self._limit()) from None

    def where(self) -> str | None:
        """Where the student's code is now (``stopped_at``): the worker dumps its stack on SIGUSR2; waited for
        at most ``DUMP_WAIT`` s, until the dump stops growing. None when nothing of theirs could be read."""
        if self.stack is None or self.dead:
            return None
        try:
            before = self.stack.stat().st_size
        except OSError:
            return None
        if not self.sandbox.dump():
            return None
        ends, size, steady = time.monotonic() + DUMP_WAIT, before, 0
        while time.monotonic() < ends and steady < 2:
            time.sleep(0.02)
            try:
                now = self.stack.stat().st_size
            except OSError:
                return None
            steady = steady + 1 if now == size and now > before else 0
            size = now
        try:
            with open(self.stack, "rb") as fh:
                head = fh.readline(4096)
                fh.seek(before)
                text = head + fh.read(256 * 1024)
        except OSError:
            return None
        return stopped_at(text.decode("utf-8", errors="replace"))

    #: what a signal that ended a worker says about which limit it hit
    LIMITS = {"SIGXFSZ": "output", "SIGXCPU": "time", "SIGKILL": "memory"}

    def _limit(self) -> str | None:
        status = self.status or {}
        return self.LIMITS.get(status.get("signal")) if status.get("state") == "signal" else None

    def _death_reason(self, exc: Exception) -> str:
        status = self.status or {}
        signal_name = status.get("signal") if status.get("state") == "signal" else None
        if signal_name in ("SIGSEGV", "SIGBUS"):
            return "your code crashed the worker process (segmentation fault)"
        if signal_name == "SIGXFSZ":
            return "your code printed or wrote more than allowed (output-size limit)"
        if signal_name == "SIGXCPU":
            return f"your code used more CPU time than the step's limit ({self.budget:g} s)"
        if signal_name == "SIGKILL":
            return "the worker process was killed (memory limit, or a limit of the machine)"
        if status.get("state") == "exit":
            return (f"your code ended the worker process (exit {status.get('code')}: sys.exit, os._exit or "
                    "similar)")
        if signal_name:
            return f"the worker process died (signal {signal_name})"
        return f"the worker process stopped answering ({exc})"

    def kill(self, wait: float = 0.0) -> None:
        if self.dead:
            return
        self.dead = True
        self.forget()
        self.sock.close()
        self.status = self.sandbox.end(wait)

    def close(self) -> None:
        """End a worker whose step is done."""
        self.kill()
