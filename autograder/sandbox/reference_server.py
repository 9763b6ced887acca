"""The trusted side's handle on the reference worker (``worker/reference_server.py``), and the check of
every stand-in call relayed to it.

The reference worker runs the stand-ins' code, so that none of it is ever in a student's process. It is a
worker of its own sandbox, forked from the zygote and confined like a student's worker, but under a uid
no student's worker is ever given (the last of the zygote's block), and it never imports a submission. It
lives as long as the grading process that started it, serving every submission: it holds no student
state (each call brings the module it runs; what it keeps is what the reference built from given arguments
and a random state, bounded, the same for every submission), and is started again if a call kills it or
runs out of time.
"""
from __future__ import annotations

import collections
import json
import os
import shutil
import time
from pathlib import Path

from autograder.worker import reference_server as other_half
from autograder.worker import tempdirs, wire

from . import uids
from .standin_answers import StandinAnswers
from .host import WorkerError

#: the reference worker's CPU: it serves a whole batch (a call's wall-clock time is the caller's deadline)
CPU_SECONDS = 3600.0
#: the graphs of the running reference worker remembered here: more than it keeps (``other_half.KEPT``)
GRAPHS = 1024
#: what the reference worker answers a backward naming a graph it does not keep (``other_half.Server.backward``)
STALE = wire.pack({"ok": False, "error": {"type": other_half.STALE}})


def refused(message: str) -> bytes:
    """A stand-in call's answer, as a frame: refused, with why."""
    return wire.pack({"ok": False, "error": {"type": "RuntimeError", "message": message}})


class ReferenceWorker:
    def __init__(self, zygote, sources: dict[str, str], steps: list[str], limits: dict):
        self.zygote = zygote
        self.sources = sources
        self.steps = steps
        self.limits = limits
        self._sandbox = None
        self._worker = None
        self._owner = None  # the process that started it: a forked batch job starts its own
        self._root: Path | None = None
        self.answers = StandinAnswers()  # the same call, the same answer: asked again, answered here
        #: the graphs the running reference worker made for a backward (a forward's ``kept``), the newest last
        self._graphs: collections.OrderedDict[str, None] = collections.OrderedDict()

    def _start(self, deadline: float) -> None:
        self._graphs.clear()  # a new reference worker: no graph of its yet
        self._root = tempdirs.make("grade-reference-", mode=0o711)
        (self._root / "empty").mkdir()
        self._sandbox = self.zygote.open({"folder": str(self._root / "empty"), "scratch": str(self._root / "work"),
                                          "limits": self.limits, **uids.for_reference(self.zygote.uid_base)})
        self._worker = self._sandbox.spawn({"modules": [], "reference": True}, self._root / "output",
                                           CPU_SECONDS, CPU_SECONDS)
        self._worker.request({"op": "reference", "sources": self.sources, "steps": self.steps},
                             deadline=min(deadline, time.monotonic() + 60))
        self._owner = os.getpid()

    def call(self, header: bytes, blob: bytes, deadline: float, key: bytes | None = None,
             graph: str | None = None) -> bytes:
        """Relay one checked stand-in call (a frame's header and blob, undecoded) and return the answer's
        frame, undecoded too; the caller's deadline is the call's. A call asked before is answered as then.

        ``graph``: the graph a ``backward`` names. One the running reference worker never made (its forward was
        answered from the kept answers: an earlier batch's, or another job's), or no longer keeps, is answered here
        as that worker answers a well-formed call naming it: stale; the proxy runs the forward again with the
        gradients asked for."""
        key = self.answers.key(header, blob) if key is None else key
        kept = self.answers.get(key)
        if kept is not None:
            return kept
        running = self._owner == os.getpid() and self._worker is not None and not self._worker.dead
        if graph is not None and (not running or graph not in self._graphs):
            return STALE
        if not running:
            if self._owner == os.getpid():
                self.close()
            try:
                self._start(deadline)
            except (WorkerError, OSError, RuntimeError):
                self.close()
                return refused("the grader could not start its stand-ins")
        try:
            answer_header, answer_blob, parsed = self._worker.exchange(wire.frame(header, blob), deadline)
            answer = wire.frame(answer_header, answer_blob)
            self.answers.put(key, answer_header, answer)
            made = parsed.get("kept") if type(parsed) is dict else None
            if graph is not None:
                self._graphs.pop(graph, None)  # a graph serves one backward
            elif type(made) is str:
                self._graphs[made] = None
                while len(self._graphs) > GRAPHS:
                    self._graphs.popitem(last=False)
            return answer
        except WorkerError as exc:
            self.close()  # started again for the next call
            if exc.limit == "time":
                return refused("the step ran out of its time limit while a stand-in was running")
            return refused("the stand-in could not run on these inputs (a limit of the grader's was hit)")

    def calls_for(self, holds) -> StandinCalls:
        """What one student's worker may ask of this reference worker: the stand-ins it holds (``holds()``)."""
        return StandinCalls(self, holds)

    def close(self) -> None:
        if self._owner is not None and self._owner != os.getpid():  # another process's: not ours to stop
            self._worker = self._sandbox = self._owner = None
            return
        if self._worker is not None:
            self._worker.close()
        if self._sandbox is not None:
            self._sandbox.close()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
        self._worker = self._sandbox = self._root = self._owner = None
        self._graphs.clear()


class StandinCalls:
    """What one student's worker may ask of the reference worker: only the stand-ins it holds."""

    OPS = {"construct", "forward", "call", "backward"}

    def __init__(self, reference: ReferenceWorker, holds):
        self.reference = reference
        self.holds = holds  # () -> the steps whose stand-ins the worker holds now

    def __call__(self, message, blob: bytes, deadline: float) -> bytes:
        """``message``: the call's header, parsed (its tensors still in ``blob``)."""
        holds = self.holds()
        if type(message) is not dict or type(message.get("op")) is not str or message["op"] not in self.OPS \
                or type(message.get("step")) is not str or message["step"] not in holds \
                or not _steps_held(_tree(message), holds, message["step"]):
            return refused("no such stand-in here")
        # how a module was built (``build``) changes no answer: it only lets the reference worker build a module it
        # no longer holds (a build that is not what the call names is answered stale, and never kept)
        header = json.dumps(message).encode("utf-8")
        plain = header if "build" not in message else json.dumps({k: v for k, v in message.items()
                                                                  if k != "build"}).encode()
        graph = None
        if message["op"] == "backward":  # a name that is no graph's is no graph of the reference worker's either
            graph = message.get("kept") if type(message.get("kept")) is str else ""
        return self.reference.call(header, blob, deadline, self.reference.answers.key(plain, blob), graph=graph)


def _tree(message: dict):
    """A call's module tree (its JSON text parsed; ``False`` if it is not JSON), or None for a call without one."""
    text = message.get("tree")
    if text is None:
        return None
    try:
        return json.loads(text) if type(text) is str and len(text) <= wire.MAX_HEADER else False
    except (ValueError, RecursionError):
        return False


def _steps_held(tree, holds, step: str, depth: int = 0) -> bool:
    """A module tree may name, as the unit's own classes, only the call's step at its root and stand-ins the
    worker holds below it (a tree naming another step would have it computed: the reference worker also
    takes the root from the call's step)."""
    if tree is None:
        return True
    if type(tree) is not dict or depth > 8:
        return False
    if tree.get("step") and tree.get("class") not in holds:
        return False
    if depth == 0 and tree.get("step") is not True or depth == 0 and tree.get("class") != step:
        return False
    children = tree.get("children")
    if type(children) is not list:
        return False
    return all(type(c) is list and len(c) == 2 and _steps_held(c[1], holds, step, depth + 1) for c in children)
