"""What a module's ``__init__`` left where ``nn.Module`` does not look: heads in a plain list, plain tensors.

A fact for the student's feedback (``feedback/structure.py`` says it): the worker reports it beside a module's
parameters, and the notebooks' checking helper carries this file too (``nbgrader_course/helper.py`` pastes it), so
both find the same. Standard library and torch only.
"""
from __future__ import annotations

import torch

#: at most this many findings are reported for one module
MAX_FOUND = 20


def unregistered(module) -> list[dict]:
    """The attributes of ``module`` and its registered submodules that hold modules or tensors nn.Module does not
    register: ``{"name": "heads", "kind": "modules" | "tensors" | "tensor", "container": "list"}``."""
    found: list[dict] = []
    registered = {id(m) for m in module.modules()} | {id(p) for p in module.parameters()} \
        | {id(b) for b in module.buffers()}
    for prefix, sub in module.named_modules():
        try:
            attributes = list(vars(sub).items())
        except TypeError:
            continue
        for attr, value in attributes:
            if attr.startswith("_") or len(found) >= MAX_FOUND:
                continue
            name = f"{prefix}.{attr}" if prefix else attr
            if type(value) in (list, tuple, dict):
                items = list(value.values()) if type(value) is dict else list(value)
                if all(id(item) in registered for item in items):  # kept twice: registered elsewhere too
                    continue
                if items and all(isinstance(item, torch.nn.Module) for item in items):
                    found.append({"name": name, "kind": "modules", "container": type(value).__name__})
                elif items and all(isinstance(item, torch.Tensor) for item in items):
                    found.append({"name": name, "kind": "tensors", "container": type(value).__name__})
            elif isinstance(value, torch.Tensor) and id(value) not in registered:
                found.append({"name": name, "kind": "tensor", "requires_grad": bool(value.requires_grad)})
    return found
