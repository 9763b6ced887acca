"""Stand-ins in the student's process: proxies of the *other* steps, whose code runs elsewhere.

So that one bug costs points once: while ``multihead_attention.MultiHeadAttentionWrapper`` is graded,
every name in the student's modules that refers to the student's own ``CausalAttention`` refers to a
stand-in instead. A stand-in holds no reference code in any form (no source, no bytecode, no function of
the reference): it is a thin proxy. Its constructor asks the reference worker to build the real module
from this process's random state and copies back what was built (the ``torch.nn`` layers, parameters,
buffers and plain attributes, and the random state after the draws), so its parameters are the ones the
reference would have drawn here. Its ``forward`` (and, through a ``torch.autograd.Function``, its
backward) is computed by the reference worker too, from the tensors it is given, so gradients flow into
the student's module and dropout draws from this process's random state as the reference would.

The other half is ``reference_server.py`` (the reference worker); between them, the trusted side checks
every call against the stand-ins this worker may hold (``sandbox/reference_server.py``: ``StandinCalls``).
"""
from __future__ import annotations

import builtins
import hashlib
import json
import types
from typing import Callable

import torch
import torch.nn as nn

from . import module_tree

#: ``call(message) -> answer``: one round trip to the reference worker, through the trusted side
Call = Callable[[dict], dict]

#: the answer of a reference worker that no longer keeps the module a call names (reference_server.py)
STALE = "$stale"

#: the exceptions a stand-in may raise as the reference raised them; anything else is a RuntimeError
_RAISABLE = {"ValueError", "TypeError", "AssertionError", "IndexError", "KeyError", "RuntimeError",
             "NotImplementedError", "ZeroDivisionError", "AttributeError", "MemoryError"}


def _raise(error: dict) -> None:
    kind = error.get("type") if error.get("type") in _RAISABLE else "RuntimeError"
    raise getattr(builtins, kind)(str(error.get("message", "")))


def _mark(tensor: torch.Tensor) -> tuple:
    """What changes when a tensor does: its storage, its in-place version, its shape and dtype."""
    return (tensor.data_ptr(), tensor._version, tuple(tensor.shape), tensor.dtype)


def _ask(call: Call, message: dict) -> dict:
    answer = call(_sent(message))
    if isinstance(answer, dict) and (answer.get("error") or {}).get("type") == STALE and message.get("built"):
        # not kept there (built here from a cached answer, or dropped since): it is built there again from how it
        # was built here, and kept for the calls that follow
        # (its random state as text: the call's tensors, and so its blob, stay what they were)
        built = message["built"]
        answer = call(_sent({**message, "build": {"init": built["init"], "rng": built["rng"].numpy().tobytes().hex()}}))
    if isinstance(answer, dict) and (answer.get("error") or {}).get("type") == STALE:
        answer = call(_sent({**message, "held": []}))
    if not isinstance(answer, dict) or not answer.get("ok"):
        _raise((answer or {}).get("error") or {"message": "the stand-in could not run"})
    if answer.get("rng") is not None:  # the draws the reference made, made here too
        torch.set_rng_state(answer["rng"])
    return answer


def _sent(message: dict) -> dict:
    """The message as sent: the inputs the reference worker still holds (``held``) are not sent again; how the
    module was built (``built``) goes only with a ``build`` asked for."""
    message = {k: v for k, v in message.items() if k != "built"}
    held = message.get("held")
    if not held or "inputs" not in message:
        return message
    inputs = list(message["inputs"])
    first = len(inputs) - message["n_state"]
    for index in held:
        inputs[first + index] = None
    return {**message, "inputs": inputs}


def _flatten(value, tensors: list):
    """``value`` with each tensor replaced by ``{"$in": index}`` (the tensors gathered in ``tensors``)."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return {"$in": len(tensors) - 1}
    if isinstance(value, (list, tuple)):
        items = [_flatten(v, tensors) for v in value]
        return {"$tuple": items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {"$dict": {str(k): _flatten(v, tensors) for k, v in value.items()}}
    return value


class _Remote(torch.autograd.Function):
    """The reference's computation, done by the reference worker: forward now, backward when asked.

    The reference worker keeps the forward's graph (``keep``: the inputs whose gradients may be asked for), so a
    backward sends only the outputs' gradients; if it no longer keeps it, the forward is run there again, from the
    same inputs and random state (the same dropout mask), with the gradients asked for."""

    @staticmethod
    def forward(ctx, call, message, *tensors):  # torch's protocol
        ctx.call, ctx.message = call, message
        ctx.save_for_backward(*tensors)
        ctx.wants = [i for i, need in enumerate(ctx.needs_input_grad[2:]) if need]
        answer = _ask(call, {**message, "inputs": list(tensors), "keep": ctx.wants})
        ctx.kept = answer.get("kept")
        output = answer["output"]
        ctx.many = isinstance(output, (tuple, list))
        return tuple(output) if ctx.many else output

    @staticmethod
    def backward(ctx, *grad_outputs):  # torch's protocol
        tensors = ctx.saved_tensors
        answer = None
        if ctx.kept is not None:
            answer = ctx.call({"op": "backward", "step": ctx.message["step"], "kept": ctx.kept,
                               "outputs": list(grad_outputs)})
            ctx.kept = None  # a graph serves one backward
            if isinstance(answer, dict) and (answer.get("error") or {}).get("type") == STALE:
                answer = None
            elif not isinstance(answer, dict) or not answer.get("ok"):
                _raise((answer or {}).get("error") or {"message": "the stand-in could not run"})
        if answer is None:
            answer = _ask(ctx.call, {**ctx.message, "inputs": list(tensors),
                                     "grad": {"outputs": list(grad_outputs), "wrt": ctx.wants}})
        grads = [None] * len(tensors)
        for index, grad in zip(ctx.wants, answer["grads"]):
            grads[index] = grad
        return (None, None, *grads)


def _run(call: Call, message: dict, args: tuple, kwargs: dict, state: list[torch.Tensor]):
    """Call the reference on ``args``/``kwargs`` (and a module's ``state``: its tensors), differentiably."""
    inputs: list = []
    shape = _flatten([list(args), dict(kwargs)], inputs)
    message = {**message, "args": shape, "rng": torch.get_rng_state(), "n_state": len(state)}
    tensors = [*inputs, *state]
    if not any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors) or not torch.is_grad_enabled():
        return _ask(call, {**message, "inputs": [t.detach() for t in tensors]})["output"]
    return _Remote.apply(call, message, *tensors)


def construct_handle(step: str, init: str, rng: torch.Tensor) -> str:
    """The name of what the reference builds for ``step`` from ``init`` (JSON) and the random state ``rng``:
    the same on both sides, so a module built here from a cached answer is known to be held there too."""
    digest = hashlib.sha1(step.encode() + b"\0" + init.encode() + b"\0")
    digest.update(rng.numpy().tobytes())
    return digest.hexdigest()


#: at most this many bytes of parameters kept per worker for modules built again (``_draw``)
DRAWN_BYTES = 64 << 20


def _draw(module: nn.Module, plan: list, handle: str, drawn: dict) -> None:
    """Draw ``module``'s layers as ``plan`` says, from this process's random state.

    ``drawn``: handle -> (the random state after the draws, the values drawn). The same step, arguments and
    random state draw the same values (a test's every case builds GPT-2's 2.4M parameters from one seed): those
    are copied, and the random state set to where the draws ended, as drawing them again would leave it."""
    kept = drawn.get(handle)
    if kept is not None:
        module_tree.place(module, plan, kept[1])
        torch.set_rng_state(kept[0])
        return
    module_tree.replay(module, plan)
    values = module_tree.drawn(module, plan)
    kept_bytes = sum(v.nbytes for _, kept_values in drawn.values() for v in kept_values)
    if kept_bytes + sum(v.nbytes for v in values) <= DRAWN_BYTES:
        drawn[handle] = (torch.get_rng_state(), values)


def proxy_class(step: str, call: Call, classes: dict[str, type], built: dict, drawn: dict | None = None) -> type:
    """An ``nn.Module`` class named as the step's, whose instances are built and run by the reference.

    ``built``: (step, arguments) -> the reference worker's answer, for modules whose parameters are drawn
    here (the same arguments again need no round trip); ``drawn``: what those draws gave (``_draw``)."""
    drawn = {} if drawn is None else drawn
    module_name, name = step.split(".", 1)

    def step_of(cls: type) -> str | None:
        return getattr(cls, "_standin_step", None) if cls in classes.values() else None

    def __init__(self, *args, **kwargs):
        nn.Module.__init__(self)
        init = json.dumps(_flatten([list(args), dict(kwargs)], []))
        start = torch.get_rng_state()
        handle = construct_handle(step, init, start)
        answer = built.get((step, init))
        if answer is None:
            answer = _ask(call, {"op": "construct", "step": step, "init": init, "rng": start})
            if answer.get("replay") is not None:  # the same arguments again: built here, from this answer
                built[(step, init)] = answer
        # its buffers fresh (two modules built from one cached answer share no tensor), a mask made from its description
        module_tree.rebuild(module_tree.map_buffers(answer["tree"], module_tree.expand), classes.__getitem__, into=self)
        if answer.get("replay") is not None:  # the parameters drawn here, as the reference drew them
            _draw(self, answer["replay"], handle, drawn)
        # The reference worker keeps what it built (the same arguments and random state, the same module, for
        # every submission alike): a call names it and sends only the tensors changed since (all of them, if it
        # is no longer kept there).
        object.__setattr__(self, "_standin_held", (handle, [(t, _mark(t)) for t in module_tree.state(self)],
                                                   {"init": init, "rng": start}))

    def forward(self, *args, **kwargs):
        tensors: list = []
        tree = module_tree.describe(self, step_of, tensors)
        handle, marks, built = getattr(self, "_standin_held", (None, [], None))
        held = [i for i, (t, (kept, mark)) in enumerate(zip(tensors, marks)) if t is kept and _mark(t) == mark]
        return _run(call, {"op": "forward", "step": step, "tree": json.dumps(tree), "handle": handle, "held": held,
                           "built": built},
                    args, kwargs, tensors)

    cls = type(name, (nn.Module,), {"__init__": __init__, "forward": forward, "__module__": module_name,
                                    "__qualname__": name, "_standin_step": step,
                                    "__doc__": f"Stand-in for {name} (computed by the grader)."})
    classes[step] = cls
    return cls


def proxy_function(step: str, call: Call):
    """A function named as the step's, computed by the reference."""
    module_name, name = step.split(".", 1)

    def standin(*args, **kwargs):
        return _run(call, {"op": "call", "step": step}, args, kwargs, [])

    standin.__name__ = standin.__qualname__ = name
    standin.__module__ = module_name
    return standin


def build(kinds: dict[str, str], call: Call) -> dict[str, object]:
    """Proxies for the stand-ins this worker may hold (step id -> "class" or "function"), in unit order."""
    classes: dict[str, type] = {}
    objects: dict[str, object] = {}
    built: dict = {}
    drawn: dict = {}
    for step, kind in kinds.items():
        objects[step] = (proxy_class(step, call, classes, built, drawn) if kind == "class"
                         else proxy_function(step, call))
    return objects


def substitute(modules: dict[str, types.ModuleType], standins: dict[str, object]) -> list[str]:
    """Rebind, in every student module, each name bound to a student step that has a stand-in."""
    replaced = []
    for step, standin in standins.items():
        module_name, name = step.split(".", 1)
        original = getattr(modules.get(module_name), name, None)
        if original is None:
            continue
        for module in modules.values():
            for key, value in list(vars(module).items()):
                if value is original:
                    setattr(module, key, standin)
                    replaced.append(f"{module.__name__}.{key}")
    return replaced
