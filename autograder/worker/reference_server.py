"""The reference worker: runs the stand-ins' code, for the proxies in students' workers.

A worker forked and confined like any other (its own uid, no network, the same limits), which never
imports a submission: the trusted side sends it the reference solutions' source, once, and then relays
the calls of the stand-in proxies (``standins.py``, the other half) that it has checked. Only data
crosses: the tensors, the module trees (``module_tree.py``), the random state. Four requests:

* ``construct``: build the step's class from the given arguments, after setting the caller's random
  state; answer the module as a tree with its tensors, and the random state after the draws;
* ``forward`` / ``call``: rebuild the caller's module around the reference class (``forward``) or take the
  reference function (``call``), run it on the inputs from the caller's random state; answer the output
  and the random state after it. With ``keep`` (the inputs whose gradients may be asked for), keep the
  graph for a ``backward``; with ``grad``, run it again from the same state and answer the gradients of
  the given outputs with respect to the inputs asked for (a backward whose graph is no longer kept);
* ``backward``: the gradients of a kept forward's inputs, given its outputs' gradients.
"""
from __future__ import annotations

import collections
import importlib.abc
import json
import importlib.util
import secrets
import socket
import sys

import torch
import torch.nn as nn

from . import module_tree, standins, syscalls, wire

PACKAGE = "reference_solutions"
#: modules built and kept, by what they were built from (GPT-2's are 14 MB each; the same for every
#: submission, since the cases seed alike): a call naming one no longer kept is answered STALE (and sent again)
HELD = 64
HELD_BYTES = 256 * 2**20
#: forward graphs kept for the backward that follows (a backward naming one no longer kept is answered STALE, and the
#: caller runs the forward again with the gradients asked for)
KEPT = 16
STALE = "$stale"


class _Sources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import ``reference_solutions.<module>`` from source text held in memory."""

    def __init__(self, sources: dict[str, str]):
        self.sources = sources

    def find_spec(self, fullname, path=None, target=None):  # importlib's protocol
        if fullname == PACKAGE:
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        if fullname.startswith(PACKAGE + ".") and fullname[len(PACKAGE) + 1:] in self.sources:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if module.__name__ == PACKAGE:
            module.__path__ = []
            return
        short = module.__name__[len(PACKAGE) + 1:]
        exec(compile(self.sources[short], f"<reference {short}>", "exec"), module.__dict__)  # noqa: S102 - ours


def load(sources: dict[str, str], steps: list[str]) -> dict[str, object]:
    """The reference's step objects (step id -> class or function), from the modules' sources."""
    sys.meta_path.insert(0, _Sources(sources))
    objects = {}
    for step in steps:
        module_name, name = step.split(".", 1)
        objects[step] = getattr(importlib.import_module(f"{PACKAGE}.{module_name}"), name)
    return objects


def _unflatten(value, tensors: list):
    if isinstance(value, dict):
        if "$in" in value:
            return tensors[int(value["$in"])]
        if "$tuple" in value:
            return tuple(_unflatten(v, tensors) for v in value["$tuple"])
        if "$dict" in value:
            return {k: _unflatten(v, tensors) for k, v in value["$dict"].items()}
    if isinstance(value, list):
        return [_unflatten(v, tensors) for v in value]
    return value


class Server:
    def __init__(self, objects: dict[str, object]):
        self.objects = objects
        self.steps = {obj: step for step, obj in objects.items() if isinstance(obj, type)}
        self.replays: dict[tuple, list | None] = {}  # (step, arguments) -> its replay plan, or None
        self.held: collections.OrderedDict[str, list] = collections.OrderedDict()  # handle -> tensors built
        self.kept: collections.OrderedDict[str, tuple] = collections.OrderedDict()  # token -> (outputs, inputs wanted)

    def step_of(self, cls: type) -> str | None:
        return self.steps.get(cls)

    def class_for(self, step: str) -> type:
        cls = self.objects.get(step)
        if not isinstance(cls, type):
            raise TypeError(f"{step} is not a class")
        return cls

    def construct(self, request: dict) -> dict:
        init = request["init"]
        if type(init) is not str or len(init) > 4096:  # arguments no exercise has
            raise TypeError("a stand-in's arguments must be a few plain values")
        handle = standins.construct_handle(request["step"], init, request["rng"])
        if handle in self.held:  # built before from the same arguments and random state: the same module
            self.held.move_to_end(handle)
            return self.held[handle][0]
        cls = self.class_for(request["step"])
        args, kwargs = _unflatten(json.loads(init), [])
        start = request["rng"]
        torch.set_rng_state(start)
        module = cls(*args, **kwargs)
        after = torch.get_rng_state()
        tree = module_tree.describe(module, self.step_of)
        plan = self._replayable(request, tree, module, start, after)
        sent = module_tree.map_buffers(tree, module_tree.compact)  # a causal mask travels as its description
        if plan is None:
            answer = {"ok": True, "tree": sent, "rng": after, "handle": handle}
        else:  # the caller draws the parameters itself, layer by layer, as the reference did: only buffers travel
            answer = {"ok": True, "tree": _without_parameters(sent), "replay": plan, "handle": handle}
        self._hold(handle, answer, module)
        return answer

    def _replayable(self, request: dict, tree: dict, module: nn.Module, start, after) -> list | None:
        """The module's replay plan, if replaying it from ``start`` draws exactly its parameters and ends in
        ``after`` (checked once per step and arguments)."""
        key = (request["step"], request["init"])
        if key not in self.replays:
            plan = module_tree.replay_plan(module)
            if plan is not None:
                torch.set_rng_state(start)
                again = module_tree.rebuild(_without_parameters(tree), self.class_for)
                module_tree.replay(again, plan)
                if not (module_tree.same_values(again, module) and torch.equal(torch.get_rng_state(), after)):
                    plan = None
            if len(self.replays) > 256:
                self.replays.clear()
            self.replays[key] = plan
        torch.set_rng_state(after)
        return self.replays[key]

    def _hold(self, handle: str, answer: dict, module: nn.Module) -> None:
        """Keep what was built: a call may then name the tensors it still holds unchanged instead of sending them."""
        self.held[handle] = (answer, module_tree.state(module), {})  # the last: modules rebuilt around these tensors
        while len(self.held) > HELD or (len(self.held) > 1 and _bytes(self.held) > HELD_BYTES):
            self.held.popitem(last=False)

    def run(self, request: dict) -> dict:
        inputs = list(request["inputs"])
        if request["op"] == "forward":  # the module's tree travels as JSON text: plain data, no tensor in it
            if type(request.get("tree")) is not str:
                raise TypeError("a stand-in's module must travel as its tree's text")
            request = {**request, "tree_text": request["tree"], "tree": json.loads(request["tree"])}
        # a module's tensors follow the call's own inputs (a function's call has no tree)
        n_args = len(inputs) - _count_state(request["tree"]) if request["op"] == "forward" else len(inputs)
        if request.get("held"):  # the module's tensors the caller still holds as they were built
            held = self.held.get(request.get("handle"))
            if held is None and isinstance(request.get("build"), dict):  # built here now, as the caller built it
                self.construct({"step": request["step"], "init": request["build"].get("init"),
                                "rng": _state(request["build"].get("rng"))})
                held = self.held.get(request.get("handle"))  # None still if the handle is not what was built
            if held is None:
                return {"ok": False, "error": {"type": STALE}}
            entry, held = held, held[1]
            for index in request["held"]:
                inputs[n_args + int(index)] = held[int(index)]
        else:
            entry = None
        grad = request.get("grad")
        keep = request.get("keep") if not grad and isinstance(request.get("keep"), list) else None
        wrt = [int(i) for i in grad["wrt"]] if grad else [int(i) for i in keep] if keep is not None else []
        if grad or keep is not None:
            inputs = [t.detach().requires_grad_(i in wrt and t.is_floating_point()) for i, t in enumerate(inputs)]
        args, kwargs = _unflatten(request["args"], inputs)
        if request["op"] == "forward":
            module, held = self._module(request, inputs[n_args:], entry, [i - n_args for i in wrt if i >= n_args])
            leaves = inputs[:n_args] + held
            callee = module
        else:
            callee = self.objects[request["step"]]
            if isinstance(callee, type):
                raise TypeError(f"{request['step']} is a class")
            leaves = inputs
        torch.set_rng_state(request["rng"])
        with torch.set_grad_enabled(bool(grad) or keep is not None):
            output = callee(*args, **kwargs)
        if not grad:
            after = torch.get_rng_state()  # sent back only if the call drew (dropout in training): 5 KB less each way
            answer = {"ok": True, "output": _detached(output),
                      **({} if torch.equal(after, request["rng"]) else {"rng": after})}
            if keep is not None:  # the graph, for the backward that follows
                token = secrets.token_hex(16)
                self.kept[token] = (list(output) if isinstance(output, (tuple, list)) else [output],
                                    [leaves[i] for i in wrt])
                while len(self.kept) > KEPT:
                    self.kept.popitem(last=False)
                answer["kept"] = token
            return answer
        return {"ok": True, "grads": _gradients(output, grad["outputs"], [leaves[i] for i in wrt])}

    def _module(self, request: dict, state: list, entry, wanted: list[int]) -> tuple[nn.Module, list]:
        """The caller's module around the reference class, and the very tensors it holds (parameters wrap them).

        Built from the call's tree; or, when every tensor is one this worker built (``entry``: what it keeps under the
        call's handle) and the tree is one it has built from before, the module built then (the reference's forward
        changes nothing in its module)."""
        # The class is the call's step, whatever the tree names (the trusted side checked the step is held)
        tree = {**request["tree"], "class": request["step"], "step": True}
        every = entry is not None and sorted({int(i) for i in request["held"]}) == list(range(len(state)))
        key = request["step"] + "\0" + request["tree_text"] if every else None
        built = entry[2].get(key) if key is not None else None
        if built is not None and all(isinstance(built[1][i], nn.Parameter) for i in wanted):
            return built
        module = module_tree.rebuild(tree, self.class_for, iter(state))
        built = (module, module_tree.state(module))
        if key is not None:
            if len(entry[2]) >= 4:
                entry[2].clear()
            entry[2][key] = built
        return built

    def backward(self, request: dict) -> dict:
        """The gradients of a kept forward's inputs, given its outputs' gradients (the graph serves once)."""
        kept = self.kept.pop(request.get("kept"), None) if isinstance(request.get("kept"), str) else None
        if kept is None:
            return {"ok": False, "error": {"type": STALE}}
        outputs, targets = kept
        return {"ok": True, "grads": _gradients(outputs, request["outputs"], targets)}

    def answer(self, request: dict) -> dict:
        try:
            if request.get("op") == "construct":
                return self.construct(request)
            if request.get("op") in ("forward", "call"):
                return self.run(request)
            if request.get("op") == "backward":
                return self.backward(request)
            return {"ok": False, "error": {"type": "RuntimeError", "message": "unknown stand-in request"}}
        except Exception as exc:  # noqa: BLE001 - the reference refused these inputs: said as it said it
            return {"ok": False, "error": {"type": type(exc).__name__, "message": str(exc)[:500]}}


def _gradients(output, grad_outputs, targets: list) -> list:
    """The gradients of ``output`` (given its gradients ``grad_outputs``) with respect to ``targets``."""
    outputs = list(output) if isinstance(output, (tuple, list)) else [output]
    if not isinstance(grad_outputs, list):
        raise TypeError("the outputs' gradients must be a list")
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs)
             if isinstance(o, torch.Tensor) and o.requires_grad and isinstance(g, torch.Tensor)]
    if pairs and targets:
        # d sum(out * grad) / d x: the same gradients as with grad_outputs, without the explicit-gradient path
        # (which imports torch's symbolic-shapes machinery, over a second, and fails where sympy cannot load)
        with torch.enable_grad():
            total = sum((o * g.to(o.dtype)).sum() for o, g in pairs)
            found = torch.autograd.grad(total, targets, allow_unused=True)
    else:
        found = [None] * len(targets)
    return [None if g is None else g.detach() for g in found]


def _state(text) -> torch.Tensor:
    """A random state sent as hexadecimal text (a ``build``'s: not a tensor, so the call's blob is the same with it)."""
    if type(text) is not str or len(text) > 65536:
        raise TypeError("a build's random state must be its bytes in hexadecimal")
    return torch.frombuffer(bytearray(bytes.fromhex(text)), dtype=torch.uint8)


def _bytes(held) -> int:
    return sum(t.numel() * t.element_size() for entry in held.values() for t in entry[1] if t is not None)


def _without_parameters(tree: dict) -> dict:
    """The tree with its parameters' values left out (the caller draws them again)."""
    return {**tree, "params": [[n, None, rg, True] for n, _t, rg, _absent in tree["params"]],
            "children": [[n, None if c is None else _without_parameters(c)] for n, c in tree["children"]]}


def _count_state(tree: dict) -> int:
    own = sum(1 for _, t, _, absent in tree["params"] + tree["buffers"] if not absent and t is None)
    return own + sum(_count_state(c) for _, c in tree["children"] if c is not None)


def _detached(value):
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, tuple):
        return tuple(_detached(v) for v in value)
    if isinstance(value, list):
        return [_detached(v) for v in value]
    return value


def serve(channel: socket.socket) -> None:
    """The first request carries the sources (``{"op": "reference", "sources": ..., "steps": ...}``)."""
    torch.set_num_threads(1)
    try:  # no process of the same uid may read our memory (/proc/PID/mem) or trace us: defence in depth
        syscalls.prctl(syscalls.PR_SET_DUMPABLE, 0)
    except (OSError, AttributeError):  # not Linux
        pass
    first = wire.recv(channel)
    server = Server(load(first["sources"], first["steps"]))
    del first
    wire.send(channel, {"ready": True})
    while True:
        try:
            request = wire.recv(channel)
        except wire.WireError:
            return
        if request.get("op") == "exit":
            return
        try:
            wire.send(channel, server.answer(request))
        except TypeError as exc:  # an output that cannot travel
            wire.send(channel, {"ok": False, "error": {"type": "TypeError", "message": str(exc)}})


__all__ = ["serve", "Server", "load", "nn"]
