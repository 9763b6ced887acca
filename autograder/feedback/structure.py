"""The likely line for what a module's ``__init__`` left where ``nn.Module`` does not look.

``nn.Module`` registers a layer, a parameter or a buffer only when it is assigned as an attribute (or put in an
``nn.ModuleList``, ``nn.ParameterList``, ``register_buffer``): heads kept in a plain Python list, a weight kept
as a plain tensor, a mask kept as a plain attribute are invisible to ``named_parameters()``, so the grader's
list of the student's parameters is empty (or short). ``autograder/worker/unregistered.py`` finds them (in the
worker, where the module is; pasted into a notebook's helper, in the kernel): each a dotted attribute name and
what it holds. It is a fact for the student's feedback only: no point rests on it (a worker's word,
docs/isolation.md), and a hidden count names an attribute only when it is one of the student's own names
(``redact.shown_name``).
"""
from __future__ import annotations

from .catalogue import Likely, hint
from .redact import shown_name


def structure_hints(found, public, *, missing_buffers=(), no_parameters: bool = False) -> list[Likely]:
    """The likely lines for what ``unregistered`` found (a claim, shown only where its names may be); with none,
    and a module that has no parameters at all (``no_parameters``), that they are not created in __init__."""
    lines: list[Likely] = []
    for fact in found or ():
        name = fact.get("name") if isinstance(fact, dict) else None
        if not isinstance(name, str) or not shown_name(name, public):
            continue
        leaf = name.rsplit(".", 1)[-1]
        if fact.get("kind") == "modules":
            lines.append(hint("modules-in-a-plain-list", attribute=f"self.{name}",
                              container=str(fact.get("container"))))
        elif fact.get("kind") == "tensors":
            lines.append(hint("tensors-in-a-plain-list", attribute=f"self.{name}",
                              container=str(fact.get("container"))))
        elif fact.get("kind") == "tensor" and leaf in missing_buffers:
            lines.append(hint("buffer-not-registered", attribute=f"self.{name}", leaf=leaf))
        elif fact.get("kind") == "tensor" and fact.get("requires_grad"):
            lines.append(hint("plain-tensor-attribute", attribute=f"self.{name}"))
    if not lines and no_parameters:
        lines.append(hint("no-parameters-at-init"))
    return [Likely("likely: " + line, line.mid) for line in lines]
