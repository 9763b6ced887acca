"""Stand-ins: correct versions of the *other* steps, substituted while one step is graded.

So that one bug costs points once: while ``multihead_attention.MultiHeadAttentionWrapper`` is graded,
every name in the student's modules that refers to the student's own ``CausalAttention`` refers to the
stand-in instead. The trusted side sends the stand-in sources; the step being graded never gets one.
"""
from __future__ import annotations

import math
import types

import torch
import torch.nn as nn
import torch.nn.functional as F


def build(sources: dict[str, str]) -> dict[str, object]:
    """Execute stand-in sources (step id -> source) and return step id -> object.

    Sources come in unit order, so a stand-in finds the ones it uses (the wrapper's CausalAttention)
    among those built before it, by name.
    """
    shared: dict[str, object] = {}
    objects: dict[str, object] = {}
    for step, source in sources.items():
        namespace = {"torch": torch, "nn": nn, "F": F, "math": math, **shared}
        exec(compile(source, f"<stand-in {step}>", "exec"), namespace)  # noqa: S102 - trusted source
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
