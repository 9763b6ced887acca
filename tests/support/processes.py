"""What the tests see of processes, from /proc: a process's descendants, when one started, whether one still lives
(and is still the process it was: a pid is reused once its process is gone)."""
from __future__ import annotations

from pathlib import Path

#: how long a test waits for the processes a killed run started to end: each dies with its parent (the kernel's
#: parent-death signal), but each needs the CPU to exit, which a loaded machine gives late; the wait ends as soon as
#: they are gone, and one that outlives its parent for good is still found
GONE_WITHIN = 30.0


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    """Running or sleeping: not gone, not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def started(pid: int) -> str:
    """When ``pid`` started (clock ticks since boot), or "" if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def still_running(born: dict[int, str]) -> list[int]:
    """The processes of ``born`` (pid -> ``started``) that are alive and still the ones that started then."""
    return sorted(p for p, when in born.items() if alive(p) and started(p) == when)


def note_descendants(pid: int, born: dict[int, str]) -> None:
    """Add to ``born`` every process now below ``pid`` that it lacks, with when it started."""
    for child in descendants(pid) - born.keys():
        born[child] = started(child)
