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
    if into is None:
        cls = class_for(tree["class"]) if tree["step"] else layer_class(tree["class"])
        into = cls.__new__(cls)
        nn.Module.__init__(into)
    module = into
    for name, value in tree["attrs"].items():
        object.__setattr__(module, name, value)

    def take(stored, absent):
        if absent:
            return None
        return next(tensors) if tensors is not None and stored is None else stored

    for name, stored, requires_grad, absent in tree["params"]:
        tensor = take(stored, absent)
        module.register_parameter(name, None if tensor is None else nn.Parameter(tensor, requires_grad=requires_grad))
    for name, stored, persistent, absent in tree["buffers"]:
        module.register_buffer(name, take(stored, absent), persistent=persistent)
    for name, child in tree["children"]:
        module.register_module(name, None if child is None else rebuild(child, class_for, tensors))
    object.__setattr__(module, "training", tree["training"])
    return module


def state(module: nn.Module) -> list[torch.Tensor]:
    """The tensors ``describe(module, ..., tensors=[])`` gathers, in the same order: the very objects held."""
    tensors: list = []
    describe(module, lambda cls: None, tensors)
    return tensors
