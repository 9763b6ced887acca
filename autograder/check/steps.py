"""The steps and modules ``grade check --step`` names (and ``%grade`` in a notebook): each as its full name."""
from __future__ import annotations

import difflib

from autograder.usage import UsageError


def known_steps(steps: tuple[str, ...], data: dict) -> tuple[str, ...]:
    """The steps and modules asked for, each as its full name; a step's name alone is enough when unique."""
    known = list(data["steps"]) + data["modules"]
    resolved = []
    for step in steps:
        if step in known:
            resolved.append(step)
            continue
        owners = [k for k in data["steps"] if k.rsplit(".", 1)[-1] == step]
        if len(owners) == 1:
            resolved.append(owners[0])
            continue
        if owners:
            raise UsageError(f"--step {step}: a step of {len(owners)} modules; say which: "
                             + ", ".join(f"--step {o}" for o in owners))
        near = difflib.get_close_matches(step, known, n=3, cutoff=0.5) or \
            [k for k in known if k.endswith("." + step)]
        raise UsageError(f"--step {step}: no such step or module" +
                         (f" (did you mean {', '.join(near)}?)" if near
                          else f"; the modules are {', '.join(data['modules'])}"))
    return tuple(resolved)
