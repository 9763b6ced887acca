"""Confine a freshly forked worker before it runs student code.

The levels, strongest first, are ``isolation.Level``'s (docs/isolation.md says what each guarantees, as tested).
The zygote probes once at start-up which one the machine allows for the user it runs as (``plan_for_zygote``),
and the grader says in every result which one was used. The confinement is applied after the fork (no ``exec``
per submission or per step): a submission's host enters its sandbox once (``enter``), each step's worker confines
itself further (``confine_step``).

``namespaces`` (root) and ``userns`` (a normal user, in a user namespace of the zygote's own and one per host)
    The host is PID 1 of its own PID namespace, so when it dies the kernel kills every process it started
    (threads, daemons, double forks). Its mount namespace has an empty tmpfs as root holding an allow-list only:
    the system libraries, the interpreter's standard library and site-packages, the staged submission read-only
    at ``/submission``, a size-limited tmpfs at ``/tmp``, four ``/dev`` nodes and its own ``/proc``. Nothing of
    the instructor's repository is there. It has no network (the zygote's own empty network namespace) and an IPC
    namespace per worker. Under ``namespaces`` each worker runs as a fresh unprivileged uid (so a fork bomb's
    process count is its own); under ``userns`` as the user, mapped inside, with no capability left, its process
    count that of the submission's user namespace.
``uid+landlock`` (root) and ``landlock`` (a normal user)
    No namespaces: each worker restricts itself with Landlock (``landlock.py``) to the same allow-list, read-only,
    its submission read-only and its scratch folder read-write; no network and no IPC objects (seccomp), signals
    and abstract sockets scoped to the worker. Under ``uid+landlock`` each worker also runs as a fresh uid, which
    reaches its submission only through the host's descriptor (``/proc/self/fd/N``: the staging folder is root's
    alone).
``uid+rlimits`` (root, neither)
    A fresh uid per worker, rlimits, the seccomp filter; the filesystem is whatever that uid may read, which the
    trusted side checks before it grades untrusted code (``autograde/reach.py``).
``rlimits``
    Neither (``grade check`` on a student's own code): memory, file-size, CPU, open-file limits and the seccomp
    filter only.
"""
from __future__ import annotations

import math
import os
try:  # POSIX; a Windows laptop's grade check runs without it (spawned workers, time limits kept by the parent)
    import resource
except ImportError:  # pragma: no cover - tested by hiding it (tests/system/test_portable.py)
    resource = None
import shutil
import signal
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field

from . import cgroups, landlock, leftovers, seccomp, tempdirs
from . import syscalls as sc
from .isolation import FOR_ROOT, FOR_USER, Level
from .limits import address_space_limit

SUBMISSION = "/submission"
DEV_NODES = ("null", "zero", "random", "urandom")
#: under ``userns`` a worker's process count is its submission's user namespace's: the host and its watcher too
USERNS_OWN_PROCESSES = 2


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
    landlock_abi: int = 0  # uid+landlock, landlock: the kernel's Landlock ABI
    user: tuple[int, int] = (0, 0)  # userns: the user's uid and gid, mapped inside

    def under_tmp(self) -> set[str]:
        """Top-level entries of /tmp that lead to an allow-listed mount (a venv under /tmp)."""
        return {"/tmp/" + p.split("/")[2] for p in self.binds if p.startswith("/tmp/") and len(p.split("/")) > 2}

    def describe(self) -> str:
        limits = "limits on time, memory, processes, file size and output"
        landlocked = (f"Landlock ABI {self.landlock_abi}: the allow-listed files read-only, the submission read-only, "
                      "writes only in the step's own scratch folder, nothing else read or written whatever its mode")
        if self.level == Level.NAMESPACES:
            text = ("namespaces (own PID and mount namespaces, allow-listed read-only filesystem, "
                    f"{'no network, ' if self.network_cut else ''}unprivileged uid per worker, no_new_privs, {limits})")
        elif self.level == Level.USERNS:
            text = (f"userns (own user, PID, mount, IPC and network namespaces, the user mapped inside as uid "
                    f"{self.user[0]} without capabilities; allow-listed read-only filesystem, private /tmp, no "
                    f"network, no_new_privs, {limits}, the process count per submission)")
        elif self.level == Level.UID_LANDLOCK:
            text = (f"uid+landlock (unprivileged uid per worker; {landlocked}; no network; no System V IPC outside an "
                    f"IPC namespace of the worker's own; no_new_privs, {limits})")
        elif self.level == Level.LANDLOCK:
            text = (f"landlock ({landlocked}; no network; signals and abstract sockets only within the worker; no "
                    f"System V IPC or message queues, no new session; the user's own uid, no_new_privs, {limits})")
        elif self.level == Level.UID:
            text = ("uid+rlimits (unprivileged uid per worker; limits on time, memory, processes, file size and "
                    f"output; after each step, every file the worker's uid left in the machine's {len(self.shared)} "
                    f"world-writable folders ({', '.join(self.shared)}) removed at any depth, and a uid that still "
                    "owns a file or a "
                    "process never given to another worker; no network; the filesystem is what that uid may read)")
        else:
            text = "rlimits (limits on time, memory, file size and output; no namespaces, no uid change)"
        if self.level.own_uids:
            text += "; " + (self.groups.describe() or f"memory limited per process only ({self.groups_reason})")
        text += "; " + ("seccomp filter" if seccomp.supported() else "no seccomp filter on this architecture")
        return text + (f"; stronger isolation unavailable: {self.reason}" if self.reason else "")

    def shared_dirs(self) -> tuple[str, ...]:
        """Machine-wide folders a worker may write to (with namespaces or Landlock it reaches none of them)."""
        return self.shared if self.level == Level.UID else ()

    def group_name(self, host_pid: int) -> str:
        return f"h{host_pid}"


def allow_list(site_dirs: list[str]) -> list[str]:
    """What a worker may read besides its submission, at every level with an allow-list (bind-mounted or Landlock):
    the system's libraries, the interpreter's standard library, ``site_dirs`` (site-packages). The trusted side asks
    it too: an instructor's file under one of these would be readable (``autograde/reach.py``)."""
    paths = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/etc/ld.so.cache",
             sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], *site_dirs]
    seen: list[str] = []
    for path in paths:
        if os.path.lexists(path) and not any(path == s or path.startswith(s.rstrip("/") + "/") for s in seen):
            seen.append(path)
    return seen


def plan_for_zygote(uid_base: int, site_dirs: list[str], local: bool = False, most: Level = Level.NAMESPACES,
                    scan: tuple[int, int] | None = None) -> Plan:
    """Decide, once, what this machine allows (up to ``most``); cut the zygote off the network where it can.

    ``scan``: the search for world-writable folders, started beside the zygote's ``import torch``
    (``leftovers.start_discovery``): waited for if the level is ``uid+rlimits``, else stopped.
    """
    plan = _plan_level(uid_base, site_dirs, local, Level(most))
    if plan.level == Level.UID:
        plan.shared = leftovers.finish_discovery(scan)
    else:
        leftovers.cancel_discovery(scan)
    return plan


def _plan_level(uid_base: int, site_dirs: list[str], local: bool, most: Level) -> Plan:
    if local:
        return Plan(Level.RLIMITS, reason="grade check runs your own code on your own machine")
    plan = Plan(Level.RLIMITS, uid_base=uid_base, binds=allow_list(site_dirs))
    root = os.geteuid() == 0
    why: list[str] = []
    if root:
        # named after our uid block, which our grader holds locked while we live: another grader (in another
        # PID namespace too) removes these groups only once that lock is free (cgroups._sweep)
        plan.groups, plan.groups_reason = cgroups.probe(f"attention-grader-u{uid_base}" if uid_base else
                                                        f"attention-grader-{os.getpid()}")
    for level in FOR_ROOT if root else FOR_USER:
        if not most.at_least(level):
            continue
        if level == Level.RLIMITS:
            break
        failed = _try(plan, level)
        if failed is None:
            plan.level = level
            break
        why.append(f"{level}: {failed}")
    if not most.at_least((FOR_ROOT if root else FOR_USER)[0]):
        why.insert(0, f"limited to {most} by AUTOGRADER_ISOLATION")
    plan.reason = "; ".join(why)
    return plan


def _try(plan: Plan, level: Level) -> str | None:
    """Set ``plan`` up for ``level`` and probe it in a forked child; why it cannot be had, or None."""
    if level == Level.UID:
        return None  # root can always change uid
    if level.landlocked:
        version = landlock.abi()
        if version < 1:
            return "no Landlock in this kernel (Linux 5.13 or later, with landlock among its security modules)"
        if level == Level.LANDLOCK and version < landlock.SCOPES_SIGNALS:
            return (f"Landlock ABI {version} does not scope signals (ABI {landlock.SCOPES_SIGNALS}, Linux 6.12, is "
                    "needed for a worker running as your own uid)")
        plan.landlock_abi = version
        return _probe(plan, level)
    if level == Level.NAMESPACES:
        try:
            sc.unshare(sc.CLONE_NEWNET | sc.CLONE_NEWIPC | sc.CLONE_NEWUTS)
            plan.network_cut = True
        except OSError as exc:
            return f"no network namespace ({exc.strerror})"
    plan.root_dir = plan.root_dir or str(tempdirs.make("grade-root-"))  # removed by the zygote when it ends
    if level == Level.USERNS:
        plan.user = (os.geteuid(), os.getegid())
        failed = _probe(plan, level)  # the zygote's own user namespace is tried in the probe first: never half made
        if failed is None:
            try:
                _user_namespace(plan, sc.CLONE_NEWNET | sc.CLONE_NEWIPC | sc.CLONE_NEWUTS)
                plan.network_cut = True
            except OSError as exc:
                failed = f"{exc}"
        return failed
    return _probe(plan, level)


def _user_namespace(plan: Plan, flags: int) -> None:
    """Enter a new user namespace (with ``flags``' other namespaces), the user mapped to itself inside."""
    sc.unshare(sc.CLONE_NEWUSER | flags)
    uid, gid = plan.user
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)


def _probe(plan: Plan, level: Level) -> str | None:
    """Fork a child that sets up a worker at ``level``, as a host and a worker would; return why it failed, or None."""
    read, write = os.pipe()
    folder = str(tempdirs.make("grade-probe-", mode=0o755))  # as a staged submission: the worker lists it
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(read)
        try:
            trial = Plan(level, plan.network_cut, plan.uid_base, plan.binds, plan.root_dir,
                         landlock_abi=plan.landlock_abi, user=plan.user)
            if level == Level.USERNS:
                _user_namespace(trial, sc.CLONE_NEWNET | sc.CLONE_NEWIPC | sc.CLONE_NEWUTS)
            where = enter(folder, trial, {}, keep_fds=[write])
            worker = os.fork()  # as a host forks a step's worker
            if worker:
                os._exit(os.waitstatus_to_exitcode(os.waitpid(worker, 0)[1]) & 0xFF)
            work = "/tmp/probe" if level.namespaced else folder + "/work"
            confine_step(trial, plan.uid_base, os.open(os.devnull, os.O_WRONLY), work, {"processes": 4}, where)
            if not os.path.isdir(where) or (level.own_uids and os.getuid() == 0):
                raise OSError(0, "the worker's view of its submission or its uid is not as planned")
            try:
                with open("/etc/passwd", "rb"):
                    raise OSError(0, "the sandbox's view of the filesystem is not the allow-list")
            except (PermissionError, FileNotFoundError):  # refused by Landlock, or not in the sandbox's root
                pass
            os.listdir(where)
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - a forked probe: any failure is its answer
            os.write(write, f"{type(exc).__name__}: {exc}".encode()[:500])
            os._exit(1)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    tempdirs.remove(folder)
    with os.fdopen(read, "rb") as fh:
        message = fh.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) == 0:
        return None
    return message or f"the probe failed (status {status})"


def enter(folder: str, plan: Plan, limits: dict, keep_fds: list[int] = ()) -> str:
    """Confine a submission's host process; return where the submission is, as its workers will see it.

    With namespaces this forks once more: the parent stays outside as a watcher that exits the way the
    host does (and takes it down with it if killed), and never returns from here. The host is PID 1 of
    the new PID namespace: when it dies, every process in there dies with it. Under ``uid+landlock`` and
    ``uid+rlimits`` the host opens the submission for its workers: its staging folder is root's alone, so a
    worker's uid reaches its own submission through this descriptor only, and no other.
    """
    os.setsid()
    if plan.groups.usable:  # before any worker exists: all of them count against the submission's budget
        processes = limits.get("processes")
        plan.groups.create(plan.group_name(os.getpid()), limits.get("memory_mb"), processes and processes + 8)
    if plan.level.own_uids and not plan.level.namespaced:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        return f"/proc/self/fd/{fd}"
    if not plan.level.namespaced:
        return folder
    # IPC too: System V objects outlive their processes, so nothing one submission leaves reaches the next
    flags = sc.CLONE_NEWNS | sc.CLONE_NEWPID | sc.CLONE_NEWIPC
    if plan.level == Level.USERNS:  # a user namespace per submission: its process count is the submission's own
        _user_namespace(plan, flags)
    else:
        sc.unshare(flags)
    child = os.fork()
    if child:
        _watch(child, keep=keep_fds)
    sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL)
    _build_root(plan, folder, limits)
    return SUBMISSION


def confine_step(plan: Plan, uid: int, output_fd: int, workdir: str, limits: dict, folder: str | None = None) -> None:
    """Confine one step's worker, forked by the host: its own session, uid, output file and limits.

    ``folder``: the submission, as ``enter`` said the worker sees it (Landlock allows it, read-only)."""
    os.setsid()
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.makedirs(workdir, exist_ok=True)
    if plan.level.own_uids and not plan.level.namespaced:
        os.chown(workdir, uid, uid)
    os.chdir(workdir)
    os.umask(0o077)  # what a step writes is its own uid's alone
    if plan.level.landlocked:  # the one folder it may write in: its temporary files go there, as to a private /tmp
        os.environ["TMPDIR"] = workdir
        tempfile.tempdir = None
    own_ipc = False
    if plan.level != Level.LANDLOCK and plan.level != Level.RLIMITS:
        try:  # an IPC namespace per worker: its System V objects and POSIX queues die with it
            sc.unshare(sc.CLONE_NEWIPC)
            own_ipc = True
        except OSError:  # none: seccomp refuses System V IPC and message queues instead (below)
            pass
    rules = None
    if plan.level.landlocked:  # the paths opened now, before the uid changes (an interpreter under /root)
        rules = landlock.ruleset(plan.landlock_abi, [*plan.binds, *([folder] if folder else [])], [workdir],
                                 [f"/dev/{node}" for node in DEV_NODES])
    if plan.level.own_uids:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        parent = os.getppid()
        os.setresuid(uid, uid, uid)
        sc.die_with_parent(parent)  # again: the change of uid cleared it
        # per uid: only meaningful once the worker has a uid of its own
        _limit(resource.RLIMIT_NPROC, limits.get("processes"))
    elif plan.level == Level.USERNS:
        sc.drop_capabilities()  # the user namespace gave every capability over its own namespaces: none is left
        processes = limits.get("processes")
        _limit(resource.RLIMIT_NPROC, processes and processes + USERNS_OWN_PROCESSES)
    elif plan.level == Level.LANDLOCK and limits.get("processes"):
        # counted per user (the grader's own processes and the user's other ones too): every task on the machine
        # now, plus the step's own budget, bounds a fork bomb without refusing a fork the worker is allowed
        _limit(resource.RLIMIT_NPROC, _tasks_now() + limits["processes"])
    sc.prctl(sc.PR_SET_NO_NEW_PRIVS, 1)
    if rules is not None:
        landlock.restrict_self(rules)
    # the system calls grading never needs, and what a missing namespace would have kept apart (seccomp.py)
    seccomp.install(network=not plan.level.namespaced, ipc=not own_ipc,
                    sessions=not (plan.level.namespaced or plan.level.own_uids))
    _limit(resource.RLIMIT_AS, address_space_limit(limits.get("memory_mb")))
    _limit(resource.RLIMIT_FSIZE, limits.get("output_mb") and limits["output_mb"] * 2**20)
    # CPU: the step's budget now; up to the submission's, for later steps this worker may serve (renew_cpu)
    if limits.get("cpu_seconds"):
        step_cpu = math.ceil(limits["cpu_seconds"]) + 1
        _limit(resource.RLIMIT_CPU, step_cpu, math.ceil(limits.get("cpu_total_seconds") or 0) + 1)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_NOFILE, 256)


def _tasks_now() -> int:
    """Every task (process or thread) on the machine now (``/proc/loadavg``); a bound on any one user's."""
    try:
        with open("/proc/loadavg") as fh:
            return int(fh.read().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        return 32768


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
    if plan.level.namespaced and os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)  # every process of this namespace but its init (us)
        except ProcessLookupError:  # nothing left to kill
            pass
        return
    # (without a PID namespace or a uid of its own, the worker's processes cannot leave its process group: seccomp)
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if plan.level.own_uids:  # daemons that left the session: everything running as the step's uid
        _kill_uid(uid)
        leftovers.sweep(uid, plan.shared)  # and what it left in the machine's shared folders (any depth) and IPC


def dirty_uids(plan: Plan, uid_base: int, count: int = 1000) -> dict[int, list[str]]:
    """Under ``uid+rlimits`` and ``uid+landlock``: the uids of the block that still own a process, a file in the
    shared folders or an IPC object (a run killed with ``kill -9``, a host killed before it could tidy up), after one
    try at removing it all. The host never gives such a uid to a worker."""
    if not plan.level.own_uids or plan.level.namespaced:
        return {}
    found = leftovers.owners(uid_base, count, plan.shared)
    if found:
        for uid in found:
            _kill_uid(uid)
            leftovers.sweep(uid, plan.shared)
        # a process sent SIGKILL is gone only once the kernel has ended it (on a busy machine, not at once): looked
        # for again until none is left, for at most KILLED_WITHIN seconds
        ends = time.monotonic() + KILLED_WITHIN
        found = leftovers.owners(uid_base, count, plan.shared)
        while found and time.monotonic() < ends and all(thing.startswith("process ") for things in found.values()
                                                         for thing in things):
            time.sleep(0.01)
            found = leftovers.owners(uid_base, count, plan.shared)
    return found


#: how long a uid's killed processes may take to end before the uid is taken as still owning one
KILLED_WITHIN = 5.0


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
    if readonly:  # keeping the flags the source's mount has: in a user namespace they are locked
        sc.mount(None, target, None, sc.MS_BIND | sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV |
                 sc.locked_flags(source))


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
    # our own /proc (this PID namespace's processes only), mounted while the machine's is still in view: in a user
    # namespace the kernel mounts a proc only where one is fully visible already
    os.makedirs(root + "/proc")
    sc.mount("proc", root + "/proc", "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
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


