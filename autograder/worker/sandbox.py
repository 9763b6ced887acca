"""Confine a freshly forked worker before it runs student code."""
from __future__ import annotations

import os
import resource
from pathlib import Path

OUTPUT_FILE = "output.txt"


def enter(spawn: dict, scratch: Path) -> None:
    limits = spawn.get("limits", {})
    scratch.mkdir(parents=True, exist_ok=True)
    out = os.open(scratch / OUTPUT_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.chdir(scratch)
    if "memory_mb" in limits:
        size = int(limits["memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if "output_mb" in limits:
        size = int(limits["output_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def output_size(scratch: Path) -> int:
    try:
        return (scratch / OUTPUT_FILE).stat().st_size
    except OSError:
        return 0
