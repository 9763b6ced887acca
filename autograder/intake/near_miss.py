"""A module file handed in under a name that is almost its own: found, and the rename to make said.

Browsers save a second download as ``causal_attention (1).py``, Canvas renames a re-upload ``causal_attention-1.py``,
Windows hides the ``.txt`` of ``causal_attention.py.txt``, and a student types ``casual_attention.py``. Such a file is
not graded in the module's place (the student must hand in what they meant to, and a person may decide otherwise:
``grade decide``), but the missing module's message names it and the rename, in grade check and grade autograde
alike (tests/unit/test_hand_ins.py).
"""
from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

#: the suffixes a module may be handed in under by mistake, longest first
SUFFIXES = (".py.txt", ".ipynb.txt", ".py", ".ipynb", ".txt", ".pyw")
#: what browsers, LMSs and file managers add to a name: `` (1)``, ``-1``, ``_1``, `` copy``, ``Copy of ``
_ADDED = re.compile(r"(\s*\(\d+\)|[-_ ]\d+|\s*-?\s*copy(\s*\(\d+\))?|\s+\d+)$", re.IGNORECASE)
_PREFIX = re.compile(r"^copy of\s+", re.IGNORECASE)


def _stem(name: str) -> tuple[str, str] | None:
    """(the name without its suffix, the suffix), for a file a module could be handed in as."""
    lower = name.lower()
    for known in SUFFIXES:
        if lower.endswith(known) and len(name) > len(known):
            return name[: -len(known)], known
    return None


def normalised(stem: str) -> str:
    """``Causal Attention (1)`` -> ``causal_attention``: what was added taken off, case and separators made one."""
    text = _PREFIX.sub("", stem.strip())
    while True:
        shorter = _ADDED.sub("", text)
        if shorter == text:
            break
        text = shorter
    return re.sub(r"[\s\-.]+", "_", text.strip()).lower()


def find(folder: Path, module: str, modules: list[str]) -> str | None:
    """The file in ``folder`` (its top only, never through a link) that was most likely meant to be ``module``'s,
    or None. Another module's own file is never one."""
    own = {f"{m}{ext}" for m in modules for ext in (".py", ".ipynb")}
    candidates = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return None
    for entry in entries:
        if entry.name in own or not entry.is_file(follow_symlinks=False):
            continue
        split = _stem(entry.name)
        if split is None:
            continue
        stem, known = split
        name = normalised(stem)
        if name == module and (stem != module or known not in (".py", ".ipynb")):
            candidates.append((0, entry.name))
        elif name not in modules and difflib.SequenceMatcher(None, name, module).ratio() >= 0.85:
            closest = difflib.get_close_matches(name, modules, n=1, cutoff=0.85)
            if closest == [module]:
                candidates.append((1, entry.name))
    return min(candidates)[1] if candidates else None


def rename(found: str, module: str) -> str:
    """The rename to make, in words: the module's own suffix kept (a notebook stays a notebook)."""
    wanted = f"{module}.ipynb" if ".ipynb" in found.lower() else f"{module}.py"
    return f"{found} is there: rename it to {wanted}"
