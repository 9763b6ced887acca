"""Confine a freshly forked worker before it runs student code.

Three levels, strongest first. The zygote probes once at start-up which one the machine allows, and the
grader says in every result which one was used.

``namespaces``
    The worker is PID 1 of its own PID namespace, so when it dies the kernel kills every process it
    started (threads, daemons, double forks). Its mount namespace has an empty tmpfs as root holding an
    allow-list only: the system libraries, the interpreter's standard library and site-packages, the
    staged submission read-only at ``/submission``, a size-limited tmpfs at ``/tmp``, four ``/dev``
    nodes and its own ``/proc``. Nothing of the instructor's repository is there. It has no network
    (the zygote's own empty network namespace), runs as a fresh unprivileged uid per worker (so a fork
    bomb's process count is its own), with ``no_new_privs`` and rlimits.
``uid+rlimits``
    The machine refuses namespaces but we are root: unprivileged uid per worker and rlimits; the
    filesystem is whatever that uid may read.
``rlimits``
    Neither (not root, e.g. ``grade check`` on a student's laptop): memory, file-size, CPU, open-file
    limits only.
"""
from __future__ import annotations

import math
import os
try:  # POSIX; a Windows laptop's grade check runs without it (spawned workers, time limits kept by the parent)
    import resource
except ImportError:  # pragma: no cover - tested by hiding it (tests/test_portable.py)
    resource = None
import shutil
import signal
import sysconfig
from dataclasses import dataclass, field

from . import cgroups, leftovers, seccomp, tempdirs
from . import syscalls as sc
from .isolation import Level
from .limits import address_space_limit

SUBMISSION = "/submission"
DEV_NODES = ("null", "zero", "random", "urandom")


@dataclass
class Plan:
    level: Level = Level.RLIMITS
    network_cut: bool = False
    uid_base: int = 0
    binds: list[str] = field(default_factory=list)
    root_dir: str = ""
    reason: str = ""
    groups: cgroups.Groups = field(default_factory=cgroups.Groups)  # per-submission memory and process count
    groups_reason: str = ""
    shared: tuple[str, ...] = ()  # uid+rlimits: the world-writable folders swept after each step (leftovers.discover)

    def under_tmp(self) -> set[str]:
        """Top-level entries of /tmp that lead to an allow-listed mount (a venv under /tmp)."""
        return {"/tmp/" + p.split("/")[2] for p in self.binds if p.startswith("/tmp/") and len(p.split("/")) > 2}

    def describe(self) -> str:
        if self.level == Level.NAMESPACES:
            text = ("namespaces (own PID and mount namespaces, allow-listed read-only filesystem, "
                    f"{'no network, ' if self.network_cut else ''}unprivileged uid per worker, no_new_privs, "
                    "limits on time, memory, processes, file size and output)")
        elif self.level == Level.UID:
            text = ("uid+rlimits (unprivileged uid per worker; limits on time, memory, processes, file size and output; "
                    f"after each step, every file the worker's uid left in the machine's {len(self.shared)} world-writable "
                    f"folders ({', '.join(self.shared)}) removed at any depth, and a uid that still owns a file or a "
                    "process never given to another worker)")
        else:
            text = "rlimits (limits on time, memory, file size and output; no namespaces, no uid change)"
        if self.level != Level.RLIMITS:
            text += "; " + (self.groups.describe() or f"memory limited per process only ({self.groups_reason})")
            text += "; " + ("seccomp filter" if seccomp.supported() else "no seccomp filter on this architecture")
        return text + (f"; stronger isolation unavailable: {self.reason}" if self.reason else "")

    def shared_dirs(self) -> tuple[str, ...]:
        """Machine-wide folders a worker may write to (with namespaces it sees none of them)."""
        return self.shared if self.level == Level.UID else ()

    def group_name(self, host_pid: int) -> str:
        return f"h{host_pid}"


def _allow_list(site_dirs: list[str]) -> list[str]:
    paths = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/etc/ld.so.cache",
             sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], *site_dirs]
    seen: list[str] = []
    for path in paths:
        if os.path.lexists(path) and not any(path == s or path.startswith(s.rstrip("/") + "/") for s in seen):
            seen.append(path)
    return seen


def plan_for_zygote(uid_base: int, site_dirs: list[str], local: bool = False, most: Level = Level.NAMESPACES,
                    scan: tuple[int, int] | None = None) -> Plan:
    """Decide, once, what this machine allows (up to ``most``); cut the zygote off the network.

    ``scan``: the search for world-writable folders, started beside the zygote's ``import torch``
    (``leftovers.start_discovery``): waited for if the level is ``uid+rlimits``, else stopped.
    """
    plan = _plan_level(uid_base, site_dirs, local, most)
    if plan.level == Level.UID:
        plan.shared = leftovers.finish_discovery(scan)
    else:
        leftovers.cancel_discovery(scan)
    return plan


def _plan_level(uid_base: int, site_dirs: list[str], local: bool, most: Level) -> Plan:
    if local:
        return Plan(Level.RLIMITS, reason="grade check runs your own code on your own machine")
    plan = Plan(Level.RLIMITS, uid_base=uid_base, binds=_allow_list(site_dirs))
    if most == Level.RLIMITS:
        plan.reason = "limited to rlimits by AUTOGRADER_ISOLATION"
        return plan
    if os.geteuid() != 0:
        plan.reason = "not running as root (no uid change, no namespaces)"
        return plan
    plan.level = Level.UID
    # named after our uid block, which our grader holds locked while we live: another grader (in another
    # PID namespace too) removes these groups only once that lock is free (cgroups._sweep)
    plan.groups, plan.groups_reason = cgroups.probe(f"attention-grader-u{uid_base}" if uid_base else
                                                    f"attention-grader-{os.getpid()}")
    if most == Level.UID:
        plan.reason = "limited to uid+rlimits by AUTOGRADER_ISOLATION"
        return plan
    try:
        sc.unshare(sc.CLONE_NEWNET | sc.CLONE_NEWIPC | sc.CLONE_NEWUTS)
        plan.network_cut = True
    except OSError as exc:
        plan.reason = f"no network namespace ({exc.strerror})"
    plan.root_dir = str(tempdirs.make("grade-root-"))  # removed by the zygote when it ends (zygote.main)
    error = _probe(plan)
    if error is None and plan.network_cut:
        plan.level = Level.NAMESPACES
    elif error is not None:
        plan.reason = error
    return plan


def _probe(plan: Plan) -> str | None:
    """Fork a child that sets up a namespaced worker; return why it failed, or None."""
    read, write = os.pipe()
    folder = str(tempdirs.make("grade-probe-"))
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(read)
        try:
            trial = Plan(Level.NAMESPACES, plan.network_cut, plan.uid_base, plan.binds, plan.root_dir)
            where = enter(folder, trial, {}, keep_fds=[write])
            confine_step(trial, plan.uid_base, os.open(os.devnull, os.O_WRONLY), "/tmp/probe", {"processes": 4})
            if os.path.exists("/etc/passwd") or not os.path.isdir(where) or os.getuid() == 0:
                raise OSError(0, "the sandbox's view of the filesystem is not the allow-list")
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - a forked probe: any failure is its answer
            os.write(write, f"{type(exc).__name__}: {exc}".encode()[:500])
            os._exit(1)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    tempdirs.remove_empty(folder)
    with os.fdopen(read, "rb") as fh:
        message = fh.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) == 0:
        return None
    return message or f"the namespace probe failed (status {status})"


def enter(folder: str, plan: Plan, limits: dict, keep_fds: list[int] = ()) -> str:
    """Confine a submission's host process; return where the submission is, as it now sees it.

    With namespaces this forks once more: the parent stays outside as a watcher that exits the way the
    host does (and takes it down with it if killed), and never returns from here. The host is PID 1 of
    the new PID namespace: when it dies, every process in there dies with it.
    """
    os.setsid()
    if plan.groups.usable:  # before any worker exists: all of them count against the submission's budget
        processes = limits.get("processes")
        plan.groups.create(plan.group_name(os.getpid()), limits.get("memory_mb"), processes and processes + 8)
    if plan.level != Level.NAMESPACES:
        return folder
    # IPC too: System V objects outlive their processes, so nothing one submission leaves reaches the next
    sc.unshare(sc.CLONE_NEWNS | sc.CLONE_NEWPID | sc.CLONE_NEWIPC)
    _build_root(plan, folder, limits)
    child = os.fork()
    if child:
        _watch(child, keep=keep_fds)
    sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL)
    sc.mount("proc", "/proc", "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
    return SUBMISSION


def confine_step(plan: Plan, uid: int, output_fd: int, workdir: str, limits: dict) -> None:
    """Confine one step's worker, forked by the host: its own session, uid, output file and limits."""
    os.setsid()
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.makedirs(workdir, exist_ok=True)
    if plan.level == Level.UID:
        os.chown(workdir, uid, uid)
    os.chdir(workdir)
    os.umask(0o077)  # what a step writes is its own uid's alone
    if plan.level in (Level.NAMESPACES, Level.UID):
        try:  # an IPC namespace per worker: its System V objects and POSIX queues die with it
            sc.unshare(sc.CLONE_NEWIPC)
        except OSError:  # under uid+rlimits the host removes what the uid left instead (leftovers.py)
            pass
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        parent = os.getppid()
        os.setresuid(uid, uid, uid)
        sc.die_with_parent(parent)  # again: the change of uid cleared it
        # per uid: only meaningful once the worker has a uid of its own
        _limit(resource.RLIMIT_NPROC, limits.get("processes"))
    sc.prctl(sc.PR_SET_NO_NEW_PRIVS, 1)
    if plan.level in (Level.NAMESPACES, Level.UID):
        seccomp.install()  # the system calls grading never needs: refused (seccomp.py)
    _limit(resource.RLIMIT_AS, address_space_limit(limits.get("memory_mb")))
    _limit(resource.RLIMIT_FSIZE, limits.get("output_mb") and limits["output_mb"] * 2**20)
    # CPU: the step's budget now; up to the submission's, for later steps this worker may serve (renew_cpu)
    if limits.get("cpu_seconds"):
        step_cpu = math.ceil(limits["cpu_seconds"]) + 1
        _limit(resource.RLIMIT_CPU, step_cpu, math.ceil(limits.get("cpu_total_seconds") or 0) + 1)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_NOFILE, 256)


def die_with(parent: int) -> None:
    """This process dies with ``parent`` (Linux; elsewhere the parent's time limit ends it)."""
    if os.name == "posix":
        sc.die_with_parent(parent)


def limit_process(limits: dict) -> None:
    """A spawned worker's limits (no fork: ``spawned.py``): memory and file size, where rlimits exist."""
    _limit(resource.RLIMIT_AS if resource else None, address_space_limit(limits.get("memory_mb")))
    _limit(resource.RLIMIT_FSIZE if resource else None, limits.get("output_mb") and limits["output_mb"] * 2**20)


def kill_step(plan: Plan, pid: int, uid: int) -> None:
    """Kill a step's worker and everything it started (threads, daemons, double forks)."""
    if plan.level == Level.NAMESPACES and os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)  # every process of this namespace but its init (us)
        except ProcessLookupError:  # nothing left to kill
            pass
        return
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if plan.level == Level.UID:  # daemons that left the session: everything running as the step's uid
        _kill_uid(uid)
        leftovers.sweep(uid, plan.shared)  # and what it left in the machine's shared folders (any depth) and IPC


def dirty_uids(plan: Plan, uid_base: int, count: int = 1000) -> dict[int, list[str]]:
    """Under ``uid+rlimits``: the uids of the block that still own a process, a file in the shared folders
    or an IPC object (a run killed with ``kill -9``, a host killed before it could tidy up), after one
    try at removing it all. The host never gives such a uid to a worker."""
    if plan.level != Level.UID:
        return {}
    found = leftovers.owners(uid_base, count, plan.shared)
    if found:
        for uid in found:
            _kill_uid(uid)
            leftovers.sweep(uid, plan.shared)
        found = leftovers.owners(uid_base, count, plan.shared)
    return found


def _kill_uid(uid: int) -> None:
    """Kill every process running as ``uid``: kill(-1) from a child that has become that uid."""
    killer = os.fork()
    if killer == 0:  # pragma: no cover - child
        try:
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os._exit(0)
    os.waitpid(killer, 0)


def clear(workdir: str, keep: set[str] = frozenset()) -> None:
    """Empty the scratch directory between steps, so one step leaves nothing for the next.

    ``keep``: entries that hold allow-listed mounts (root's, read-only; a worker cannot write there).
    """
    for entry in os.scandir(workdir):
        if entry.path in keep:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


def _limit(kind: int, value, ceiling=None) -> None:
    """Set the soft limit to ``value`` and the hard one to ``ceiling`` (default: ``value``), never raising it."""
    if value is None or resource is None:
        return
    soft, hard = resource.getrlimit(kind)
    value, ceiling = int(value), int(value if ceiling is None else max(ceiling, value))
    if hard != resource.RLIM_INFINITY:
        value, ceiling = min(value, hard), min(ceiling, hard)
    resource.setrlimit(kind, (value, ceiling))


def renew_cpu(seconds: float) -> None:
    """In a worker that serves another step: a CPU limit of ``seconds`` more, within its hard limit."""
    if resource is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    value = math.ceil(usage.ru_utime + usage.ru_stime + seconds) + 1
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (value, hard))


def _bind(source: str, target: str, readonly: bool = True) -> None:
    if os.path.islink(source) and not os.path.isdir(os.path.join(source, "")):
        return
    if os.path.islink(source):  # e.g. /lib -> usr/lib on merged-/usr systems: keep it a link
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()  # a mount point for a file
    sc.mount(source, target, None, sc.MS_BIND | sc.MS_REC)
    if readonly:
        sc.mount(None, target, None, sc.MS_BIND | sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV)


def _build_root(plan: Plan, folder: str, limits: dict) -> None:
    """Make an empty tmpfs the root of this mount namespace, holding the allow-list only."""
    root = plan.root_dir
    sc.mount(None, "/", None, sc.MS_REC | sc.MS_PRIVATE)
    sc.mount("tmpfs", root, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, "size=1m,mode=0755")
    # /tmp first: an allow-listed path may live under it (a venv in /tmp/...). Its folders are root's,
    # in a sticky /tmp, so a worker can neither move nor remove them.
    os.makedirs(root + "/tmp")
    size = max(1, int(limits.get("output_mb", 4)))
    sc.mount("tmpfs", root + "/tmp", "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, f"size={size}m,mode=1777")
    for path in plan.binds:
        _bind(path, root + path)
    _bind(folder, root + SUBMISSION)
    for node in DEV_NODES:
        if os.path.exists(f"/dev/{node}"):
            _bind(f"/dev/{node}", f"{root}/dev/{node}", readonly=False)
    os.makedirs(root + "/proc")
    os.makedirs(root + "/.old")
    sc.pivot_root(root, root + "/.old")
    os.chdir("/")
    sc.umount("/.old")
    os.rmdir("/.old")
    sc.mount(None, "/", None, sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV)


def _watch(child: int, keep: list[int] = ()) -> None:
    """The outside half of a namespaced worker: wait for it, then end the same way."""
    low = 3
    for fd in sorted(k for k in keep if k >= 3) + [1 << 16]:
        os.closerange(low, fd)
        low = fd + 1
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


