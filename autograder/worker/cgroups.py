"""A control group per submission: its memory and process count limited in total, not per process.

``RLIMIT_AS`` limits each process's address space: five forked children may each take the whole
``memory_mb``. Where the machine lets us make control groups (root, with the memory and pids controllers
writable: cgroup v2's ``memory.max``/``pids.max``, or v1's ``memory.limit_in_bytes``/``pids.max``), each
submission's host joins a group of its own before it forks any worker, so every process the submission
starts counts against one budget. The zygote removes the group once the host is reaped. Where it cannot,
the isolation level says so, and the per-process limits remain.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import locks, tempdirs


def _own_groups() -> dict[str, str]:
    """controller -> our group's path inside its hierarchy ("" key: the cgroup v2 hierarchy)."""
    groups = {}
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for controller in controllers.split(",") if controllers else [""]:
                    groups[controller] = path
    except OSError:
        pass
    return groups


def _mounts() -> dict[str, str]:
    """controller -> where its hierarchy is mounted ("" : the cgroup2 mount)."""
    found = {}
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, right = line.split(" - ", 1)
                fstype, _source, options = right.split()[:3]
                point = left.split()[4]
                if fstype == "cgroup2":
                    found.setdefault("", point)
                elif fstype == "cgroup":
                    for option in options.split(","):
                        if option in ("memory", "pids"):
                            found.setdefault(option, point)
    except (OSError, ValueError):
        pass
    return found


@dataclass
class Groups:
    """Where this zygote makes its submissions' groups: one parent directory per controller."""

    parents: dict[str, str] = field(default_factory=dict)  # "memory"/"pids" (v1) or "v2" -> directory
    version: str = ""

    @property
    def usable(self) -> bool:
        return bool(self.parents)

    def describe(self) -> str:
        return f"memory and processes limited per submission (cgroup {self.version})" if self.usable else ""

    def paths(self, name: str) -> list[str]:
        return [os.path.join(parent, name) for parent in self.parents.values()]

    def create(self, name: str, memory_mb: int | None, processes: int | None) -> None:
        """Make the group ``name`` with its limits, and move the calling process into it."""
        for kind, parent in self.parents.items():
            path = os.path.join(parent, name)
            os.makedirs(path, exist_ok=True)
            if kind in ("v2", "memory") and memory_mb:
                limit = str(int(memory_mb) * 2**20)
                _write(path, "memory.max" if kind == "v2" else "memory.limit_in_bytes", limit)
                if kind == "v2":
                    _write(path, "memory.swap.max", "0", optional=True)
                else:
                    _write(path, "memory.memsw.limit_in_bytes", limit, optional=True)
            if kind in ("v2", "pids") and processes:
                _write(path, "pids.max", str(int(processes)))
            _write(path, "cgroup.procs", str(os.getpid()))

    def remove(self, name: str) -> bool:
        """Remove the group (its processes gone); False while some are still dying."""
        done = True
        for path in self.paths(name):
            if kind_of(path) == "v2":
                _write(path, "cgroup.kill", "1", optional=True)
            try:
                os.rmdir(path)
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done


def kind_of(path: str) -> str:
    return "v2" if os.path.exists(os.path.join(path, "cgroup.kill")) else "v1"


def _write(path: str, name: str, value: str, optional: bool = False) -> None:
    try:
        with open(os.path.join(path, name), "w") as fh:
            fh.write(value)
    except OSError:
        if not optional:
            raise


def probe(tag: str) -> tuple[Groups, str]:
    """The groups this machine lets us make, tried for real once; else why not (for the isolation line)."""
    if os.geteuid() != 0:
        return Groups(), "not root"
    own, mounts = _own_groups(), _mounts()
    groups = Groups()
    if "" in mounts and os.path.exists(os.path.join(mounts[""], own.get("", "/").lstrip("/"), "cgroup.controllers")):
        base = os.path.join(mounts[""], own.get("", "/").lstrip("/"))
        with open(os.path.join(base, "cgroup.controllers")) as fh:
            available = fh.read().split()
        if {"memory", "pids"} <= set(available):
            groups = Groups({"v2": os.path.join(base, tag)}, "v2")
    if not groups.usable and "memory" in mounts and "pids" in mounts:
        groups = Groups({c: os.path.join(mounts[c], own.get(c, "/").lstrip("/"), tag) for c in ("memory", "pids")},
                        "v1")
    if not groups.usable:
        return Groups(), "no writable memory and pids cgroup controllers"
    for parent in groups.parents.values():  # the groups of graders that were killed
        _sweep(os.path.dirname(parent), tag.rsplit("-", 1)[0] + "-")
    try:  # a real trial: a group with limits that this process joins and leaves again
        for kind, parent in groups.parents.items():
            os.makedirs(parent, exist_ok=True)
            if kind == "v2":
                _write(parent, "cgroup.subtree_control", "+memory +pids")
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            try:
                groups.create("probe", 64, 8)
                os._exit(0)
            except BaseException:  # noqa: BLE001 - a forked probe: any failure is its answer
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        groups.remove("probe")
        if os.waitstatus_to_exitcode(status) != 0:
            raise OSError("could not join a new group")
    except OSError as exc:
        for parent in groups.parents.values():
            try:
                os.rmdir(parent)
            except OSError:
                pass
        return Groups(), f"cgroups refused ({exc})"
    return groups, ""


def _sweep(folder: str, prefix: str) -> None:
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(prefix) and e.is_dir()]
    except OSError:
        return
    for entry in entries:
        owner = entry.name[len(prefix):]
        if owner.startswith("u") and owner[1:].isdigit():  # named after its grader's uid block: its lock says
            gone = not locks.block_held(int(owner[1:]))
        else:  # an older grader's, named after its pid (this PID namespace's only)
            gone = owner.isdigit() and not tempdirs.alive(int(owner))
        if gone:
            release(Groups({"x": entry.path}))


def release(groups: Groups) -> None:
    """Remove the zygote's parent groups (each submission's group is gone by now)."""
    for parent in groups.parents.values():
        try:
            for entry in os.scandir(parent):
                if entry.is_dir():
                    try:
                        os.rmdir(entry.path)
                    except OSError:
                        pass
            os.rmdir(parent)
        except OSError:
            pass
