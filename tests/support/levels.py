"""The isolation levels the user running the suite can have: root's (a uid per worker, namespaces made by root)
are tried as root only; as a normal user the best level is ``userns`` where unprivileged user namespaces work, else
``landlock`` (docs/isolation.md)."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess

import pytest

#: the levels that need root: a uid of its own per worker, or the namespaces root makes
ROOT_ONLY = ("namespaces", "uid+landlock", "uid+rlimits")


def for_this_user(*levels: str) -> list:
    """``levels`` as parameters, each of root's skipped (and said) when the suite runs as a normal user."""
    return [pytest.param(level, marks=pytest.mark.skipif(os.geteuid() != 0 and level in ROOT_ONLY,
                                                         reason=f"{level} is root's level"))
            for level in levels]


@functools.cache
def best_here() -> str:
    """The level a batch gets here with nothing capped: root's ``namespaces``; a normal user's ``userns`` or
    ``landlock``."""
    if os.geteuid() == 0:
        return "namespaces"
    unshare = shutil.which("unshare")
    works = unshare and subprocess.run([unshare, "-U", "-r", "true"], capture_output=True).returncode == 0
    return "userns" if works else "landlock"
