"""Stand-ins: correct versions of the *other* steps, substituted while one step is graded.

So that one bug costs points once: while ``multihead_attention.MultiHeadAttentionWrapper`` is graded,
every name in the student's modules that refers to the student's own ``CausalAttention`` refers to the
stand-in instead. The trusted side chooses them from the reference alone and sends them compiled
(marshalled bytecode, never source text); the step being graded never gets one.
"""
from __future__ import annotations

import base64
import marshal
import math
import types

import torch
import torch.nn as nn
import torch.nn.functional as F


def build(compiled: dict[str, str]) -> dict[str, object]:
    """Execute stand-ins (step id -> base64 of marshalled bytecode) and return step id -> object.

    They come in unit order, so a stand-in finds the ones it uses (the wrapper's CausalAttention)
    among those built before it, by name.
    """
    shared: dict[str, object] = {}
    objects: dict[str, object] = {}
    for step, code in compiled.items():
        namespace = {"torch": torch, "nn": nn, "F": F, "math": math, **shared}
        exec(marshal.loads(base64.b64decode(code)), namespace)  # noqa: S102 - the trusted side's bytecode
        name = step.split(".", 1)[1]
        objects[step] = namespace[name]
        shared[name] = namespace[name]
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
