"""A module as data: its ``torch.nn`` layers, parameters, buffers and plain attributes, without code.

Both halves of a stand-in use it (``standins.py`` in the student's worker, ``reference_server.py`` in the
reference worker): the reference worker describes the module the reference built, the student's worker
rebuilds it as a proxy; for each call the proxy describes itself again (without the tensors, which
travel as the call's inputs) and the reference worker rebuilds it around the reference's class.
A tree never holds a function or a class object, only names: ``torch.nn`` layer classes by their
qualified names, and the unit's own classes by their step ids.
"""
from __future__ import annotations

import importlib
from typing import Callable, Iterator

import torch
import torch.nn as nn

_PLAIN = (bool, int, float, str, type(None))


def _plain(value) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return type(value) in _PLAIN


def layer_class(path: str) -> type:
    """A ``torch.nn`` layer class by its qualified name: the only classes a tree may name besides steps."""
    module_name, _, name = path.rpartition(".")
    if not module_name.startswith("torch.nn.modules."):
        raise TypeError(f"a stand-in cannot hold a {path}")
    cls = getattr(importlib.import_module(module_name), name, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise TypeError(f"a stand-in cannot hold a {path}")
    return cls


def describe(module: nn.Module, step_of: Callable[[type], str | None], tensors: list | None = None) -> dict:
    """``module`` as a tree. With ``tensors`` (a list), the tensors are appended there in tree order and the
    tree holds ``None`` in their place; without, the tree holds them."""
    cls = type(module)
    step = step_of(cls)
    name = step or f"{cls.__module__}.{cls.__qualname__}"

    def keep(tensor):
        if tensors is None or tensor is None:
            return tensor
        tensors.append(tensor)
        return None

    return {
        "class": name,
        "step": step is not None,
        "training": bool(module.training),
        "attrs": {k: v for k, v in vars(module).items() if not k.startswith("_") and k != "training" and _plain(v)},
        "params": [[n, keep(p), p is not None and bool(p.requires_grad), p is None]
                   for n, p in module._parameters.items()],
        "buffers": [[n, keep(b), n not in module._non_persistent_buffers_set, b is None]
                    for n, b in module._buffers.items()],
        "children": [[n, None if c is None else describe(c, step_of, tensors)] for n, c in module._modules.items()],
    }


def rebuild(tree: dict, class_for: Callable[[str], type], tensors: Iterator | None = None,
            into: nn.Module | None = None) -> nn.Module:
    """The module a tree describes, without running any constructor but ``nn.Module``'s own.

    ``class_for(step id)`` gives the class of a step's node; a layer's class is found by its name. With
    ``tensors``, each ``None`` the tree holds for a tensor takes the next one. ``into``: fill this
    (already initialised) module instead of making one.
    """
    _depth[0] += 1
    try:
        return _rebuild(tree, class_for, tensors, into)
    finally:
        _depth[0] -= 1


_depth = [0]
#: how deep a tree may nest (the unit's modules nest two levels)
MAX_DEPTH = 8


def _name(module: nn.Module, name) -> str:
    """A name a tree may give: a plain identifier that hides nothing of the class (no method, no dunder)."""
    if type(name) is not str or not name.isidentifier() or name.startswith("_") or hasattr(type(module), name):
        raise TypeError(f"a stand-in cannot hold a member named {name!r}")
    return name


def _rebuild(tree: dict, class_for, tensors, into):
    if _depth[0] > MAX_DEPTH:
        raise TypeError("a stand-in's module nests too deeply")
    if into is None:
        cls = class_for(tree["class"]) if tree["step"] else layer_class(tree["class"])
        into = cls.__new__(cls)
        nn.Module.__init__(into)
    module = into
    for name, value in tree["attrs"].items():
        if not _plain(value):
            raise TypeError(f"a stand-in's attribute {name!r} is not plain data")
        object.__setattr__(module, _name(module, name), value)

    def take(stored, absent):
        if absent:
            return None
        return next(tensors) if tensors is not None and stored is None else stored

    for name, stored, requires_grad, absent in tree["params"]:
        tensor = take(stored, absent)
        module.register_parameter(_name(module, name),
                                  None if tensor is None else nn.Parameter(tensor, requires_grad=bool(requires_grad)))
    for name, stored, persistent, absent in tree["buffers"]:
        module.register_buffer(_name(module, name), take(stored, absent), persistent=bool(persistent))
    for name, child in tree["children"]:
        module.register_module(_name(module, name), None if child is None else rebuild(child, class_for, tensors))
    object.__setattr__(module, "training", bool(tree["training"]))
    return module


def state(module: nn.Module) -> list[torch.Tensor]:
    """The tensors ``describe(module, ..., tensors=[])`` gathers, in the same order: the very objects held."""
    tensors: list = []
    describe(module, lambda cls: None, tensors)
    return tensors


#: ``torch.nn`` layers a proxy may build itself, drawing their initial values from its own random state, as
#: the reference did: the layer's class -> its constructor's arguments, from the layer as built
_REPLAYABLE = {
    nn.Linear: lambda m: ((m.in_features, m.out_features), {"bias": m.bias is not None, "dtype": m.weight.dtype}),
}


def replay_plan(module: nn.Module) -> list | None:
    """How to draw ``module``'s parameters again, layer by layer in the order they were built, or None when
    some of its parameters were not drawn by a replayable layer (those travel as values)."""
    plan = []
    for name, sub in module.named_modules():
        if sub._parameters and type(sub) not in _REPLAYABLE:
            return None
        if type(sub) in _REPLAYABLE:
            args, kwargs = _REPLAYABLE[type(sub)](sub)
            plan.append([name, args,
                         {k: str(v).replace("torch.", "") if k == "dtype" else v for k, v in kwargs.items()}])
    return plan


def replay(module: nn.Module, plan: list) -> None:
    """Build the plan's layers in order (each drawing from this process's random state) into ``module``."""
    for name, args, kwargs in plan:
        _put(module, name, nn.Linear(*args, **{**kwargs, "dtype": getattr(torch, kwargs["dtype"])}))


def drawn(module: nn.Module, plan: list) -> list[torch.Tensor]:
    """Copies of what ``replay`` drew into ``module``: the plan's layers' parameters, in order."""
    return [p.detach().clone() for name, _, _ in plan
            for p in module.get_submodule(name)._parameters.values() if p is not None]


def place(module: nn.Module, plan: list, values: list[torch.Tensor]) -> None:
    """The plan's layers as ``replay`` builds them, holding copies of ``values`` (``drawn``) instead of drawing:
    the random state is left as it is (its caller sets it to where the draws ended)."""
    values = iter(values)
    for name, (in_features, out_features), kwargs in plan:
        built = nn.Linear.__new__(nn.Linear)  # what nn.Linear.__init__ makes, but for the draws (and no meta device)
        nn.Module.__init__(built)
        built.in_features, built.out_features = in_features, out_features
        built.weight = nn.Parameter(next(values).clone())
        built.register_parameter("bias", nn.Parameter(next(values).clone()) if kwargs["bias"] else None)
        _put(module, name, built)


def _put(module: nn.Module, name: str, layer: nn.Module) -> None:
    """``layer`` in ``module`` at the dotted ``name``, in the training mode of the layer it takes the place of."""
    parent_name, _, leaf = name.rpartition(".")
    parent = module.get_submodule(parent_name) if parent_name else module
    layer.train(parent.get_submodule(leaf).training)
    parent.register_module(leaf, layer)


def same_values(a: nn.Module, b: nn.Module) -> bool:
    """Exactly the same parameters (names, dtypes and bits)."""
    pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
    return pa.keys() == pb.keys() and all(pa[k].dtype == pb[k].dtype and torch.equal(pa[k], pb[k]) for k in pa)


#: the masks a causal attention registers as buffers, sent as their description instead of their values (GPT-2's
#: 1024 x 1024 mask is 4 MB): (name, diagonal) -> how to make it
_MASKS = {("triu", 1): torch.triu, ("triu", 0): torch.triu, ("tril", 0): torch.tril, ("tril", -1): torch.tril}


def compact(tensor):
    """A 2-D tensor of ones on one side of a diagonal and zeros on the other, as a description (``expand`` makes
    it again); any other tensor as it is."""
    if not isinstance(tensor, torch.Tensor) or tensor.dim() != 2 or tensor.numel() < 4096 or tensor.requires_grad \
            or tensor.dtype not in (torch.float32, torch.float64, torch.bool, torch.uint8):
        return tensor
    ones = torch.ones_like(tensor)
    for (kind, diagonal), make in _MASKS.items():
        if torch.equal(tensor, make(ones, diagonal=diagonal)):
            return {"mask": kind, "diagonal": diagonal, "shape": list(tensor.shape), "dtype": str(tensor.dtype)[6:]}
    return tensor


def expand(value):
    """A tensor from what ``compact`` gave (a fresh one for a description; a copy of a tensor)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict) and (value.get("mask"), value.get("diagonal")) in _MASKS:
        key = (value["mask"], value["diagonal"], tuple(int(n) for n in value["shape"][:2]), value["dtype"])
        if key not in _made:  # made once per process (GPT-2's is 4 MB), each module given a copy of its own
            dtype = {"float32": torch.float32, "float64": torch.float64, "bool": torch.bool, "uint8": torch.uint8}
            ones = torch.ones(*key[2], dtype=dtype[key[3]])
            _made[key] = _MASKS[(value["mask"], value["diagonal"])](ones, diagonal=value["diagonal"])
        return _made[key].clone()
    return value


_made: dict[tuple, torch.Tensor] = {}


def map_buffers(tree: dict, change: Callable) -> dict:
    """The tree with ``change`` applied to each of its buffers' values."""
    return {**tree, "buffers": [[n, change(t), *rest] for n, t, *rest in tree["buffers"]],
            "children": [[n, None if c is None else map_buffers(c, change)] for n, c in tree["children"]]}
