"""A warm ``grade check``: the first check leaves a server behind; the next ones are answered by it.

Both halves of the protocol are here, side by side (as CPython's ``multiprocessing/forkserver.py`` keeps its
own): the client, which a ``grade check`` process runs before it imports torch, and the server, which a
``grade check`` process becomes (forked, detached) after it has checked once in-process and so holds torch,
the checking code and the public cases, warm. Like Mercurial's ``chg``, the client hands its own standard
input, output and error to the server (``SCM_RIGHTS``), with its folder, environment and options; the
server forks a child for each check, which takes those descriptors as its own and runs the same
``grade check`` as the command line (``commands/check.py: main``, in-process), so what is printed, where and
in which colours, the page written and the exit status are the same; the child's exit status comes back
to the client. Each check is a fresh fork of the warm server: nothing a check did (its workers, a
submission's code, which only ever runs in a worker forked from the child) is in the server.

The server listens on a Unix socket named after everything that could change an answer (the interpreter,
the kit's files and their times, the public cases, ``AUTOGRADER_*`` settings, the niceness and resource limits a
check would inherit): reinstalling the kit or
editing it makes a new name, and the old server, unused, ends after ``GRADE_CHECK_SERVER_IDLE`` seconds
(default 600) like any idle one. It lives in a folder of the user's own, mode 0700 (``$XDG_RUNTIME_DIR``,
else the temporary folder), made and checked by ``worker/owned_dirs.py``: a folder of that name that another user
made first (or a link) is never used, and each check says so in one line and runs in-process. On Linux the
server answers only its own user, and the client hands its terminal only to a server of its own (``SO_PEERCRED``).

``GRADE_CHECK_SERVER=0`` turns it off (each check then loads torch itself, as on Windows, which has no
``fork``). Ctrl-C in the client ends the check's whole process group, as it would end an in-process check.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import importlib.util
import json
import os
import signal
import socket
import stat
import sys
import tempfile
import time
from pathlib import Path

from autograder.worker import owned_dirs
from autograder.worker.syscalls import die_with_parent
from autograder.worker.waits import ended_children

ENV = "GRADE_CHECK_SERVER"
IDLE_ENV = "GRADE_CHECK_SERVER_IDLE"
DIR_ENV = "GRADE_CHECK_SERVER_DIR"
IDLE_SECONDS = 600.0
MAX_REQUEST = 4 << 20
PACKAGE = Path(__file__).resolve().parent.parent


def enabled() -> bool:
    """Whether checks may use (and leave) a warm server here: a system with ``fork`` and descriptor passing,
    and not turned off."""
    if os.environ.get(ENV, "1").strip().lower() in ("0", "off", "no", "false"):
        return False
    return hasattr(os, "fork") and hasattr(socket, "AF_UNIX") and hasattr(socket, "send_fds")


def _folder() -> tuple[Path | None, str | None]:
    """The user's own folder for the socket (made 0700), or None and why (one line) when it is not safely ours:
    another user's, a link, one others may enter (``worker/owned_dirs.py``)."""
    chosen = os.environ.get(DIR_ENV)
    if chosen:
        folder = Path(chosen)
    else:  # named for the uid even in the user's own runtime folder: a ``sudo grade check`` that keeps
        # ``XDG_RUNTIME_DIR`` makes root's folder beside it, never the user's own (theirs could not be used again)
        base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
        folder = Path(base) / f"attention-grade-{os.getuid()}"
    try:
        if chosen:
            folder.parent.mkdir(parents=True, exist_ok=True)
        os.close(owned_dirs.open_dir(folder, private=True))
    except owned_dirs.Refused as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"{folder}: {exc.strerror or exc}"
    return folder, None


def key() -> str:
    """A name for everything that could change a check's answer, but the student's own files: among them what
    this process may use (``limited()``), which a check forked from the server has as the server has it."""
    digest = hashlib.sha256()
    for part in (sys.executable, sys.version, str(PACKAGE), str(os.getuid()), limited()):
        digest.update(part.encode() + b"\0")
    for name, value in sorted(os.environ.items()):
        if name.startswith("AUTOGRADER_"):
            digest.update(f"{name}={value}\0".encode())
    for name in ("torch", "numpy", "click"):  # a reinstalled library: found, not imported
        with contextlib.suppress(ImportError, ValueError, OSError, TypeError):
            info = os.stat(importlib.util.find_spec(name).origin)
            digest.update(f"{name}\0{info.st_mtime_ns}\0{info.st_size}\0".encode())
    top = len(str(PACKAGE)) + 1
    for folder, subfolders, files in os.walk(PACKAGE):  # os.walk: a fifth of Path.rglob's 3-5 ms, at every check
        subfolders[:] = sorted(s for s in subfolders if s != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".json", ".safetensors")):
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    info = os.stat(path)
                    digest.update(f"{path[top:]}\0{info.st_mtime_ns}\0{info.st_size}\0".encode())
    return digest.hexdigest()[:20]


@functools.cache  # as this process started: a library that raised a soft limit as it loaded names no other server
def limited() -> str:
    """What this process may use, as a check's process inherits it: its niceness, resource limits and CPUs. A server
    keeps its first caller's (a check runs as a fork of it), so a caller with others is answered by a server of its
    own: ``nice grade check`` once, or a check under ``ulimit -v``, sets nothing for the next. Not the control group:
    a desktop's terminal puts each tab in a group of its own, which would start a server (and keep its memory) per
    tab."""
    parts = []
    with contextlib.suppress(AttributeError, OSError):
        parts.append(f"nice {os.getpriority(os.PRIO_PROCESS, 0)}")
    with contextlib.suppress(ImportError):
        import resource  # noqa: PLC0415 - not on Windows

        for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_")):
            with contextlib.suppress(OSError, ValueError):
                parts.append(f"{name} {resource.getrlimit(getattr(resource, name))}")
    with contextlib.suppress(AttributeError, OSError):
        parts.append(f"cpus {sorted(os.sched_getaffinity(0))}")
    return "\n".join(parts)


def socket_path() -> Path | None:
    return _socket_in(_folder()[0])


def _socket_in(folder: Path | None) -> Path | None:
    if folder is None:
        return None
    path = folder / f"{key()}.sock"
    return path if len(os.fsencode(path)) < 104 else None  # a Unix socket's name is short (104 bytes on macOS)


# -- the client -----------------------------------------------------------------------------------
def _lines(sock: socket.socket):
    """The JSON lines the server's child writes back, one at a time."""
    buffer = b""
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)
        chunk = sock.recv(65536)
        if not chunk:
            return
        buffer += chunk


def run_served(options: dict) -> int | None:
    """The exit status of this check, done by the warm server; None where there is none (check here, then)."""
    folder, refused = _folder()
    if refused:  # said at every check: slower, never in silence
        print(f"note: no warm grade check server: {refused}; each check loads torch itself ({DIR_ENV} names "
              f"another folder, {ENV}=0 turns the server off)", file=sys.stderr, flush=True)
    path = _socket_in(folder)
    if path is None or not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None  # a server that ended: its socket is replaced by the next one
    if not _peer_is_us(sock):  # the folder is ours alone; a server of another uid is never handed our terminal
        sock.close()
        return None
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    request = json.dumps({"options": options, "cwd": os.getcwd(), "env": dict(os.environ),
                          "encoding": [[getattr(stream, "encoding", None), getattr(stream, "errors", None)]
                                       for stream in (sys.stdout, sys.stderr)],
                          "umask": _umask()}).encode()
    child = None
    with sock:
        try:
            socket.send_fds(sock, [len(request).to_bytes(8, "big") + request], [0, 1, 2])
            answers = _lines(sock)
            for answer in answers:
                if "pid" in answer:
                    child = int(answer["pid"])
                elif "exit" in answer:
                    return int(answer["exit"])
        except KeyboardInterrupt:  # Ctrl-C: end the check, its hosts and workers, as in-process (before its pid
            # is heard, the server ends it when this socket closes)
            if child is not None:
                with contextlib.suppress(OSError):
                    os.killpg(child, signal.SIGKILL)
            raise
        except (OSError, ValueError):
            pass
    if child is None:
        return None  # nothing was started: check here
    print("error: the warm grade check server ended this check without an answer; run it again "
          f"({ENV}=0 checks without it)", file=sys.stderr, flush=True)
    return 1


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# -- the server -----------------------------------------------------------------------------------
def _listen(path: Path) -> socket.socket | None:
    """A socket bound to ``path``; None if another live server has it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for _ in range(2):
        try:
            sock.bind(str(path))
            os.chmod(path, 0o600)
            sock.listen(8)
            return sock
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                break
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(path))
                break  # served already (started beside this one)
            except OSError:
                with contextlib.suppress(OSError):
                    path.unlink()  # left by a server that was killed
            finally:
                probe.close()
    sock.close()
    return None


def start() -> None:
    """Leave a warm server behind this process (which has just checked in-process): forked and detached, so the
    caller's ``grade check`` ends now, and its pipes are not held open."""
    path = socket_path()
    if path is None:
        return
    listener = _listen(path)
    if listener is None:
        return
    pid = os.fork()
    if pid:
        listener.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        return
    try:  # pragma: no cover - the server's own process
        os.setsid()
        if os.fork():
            os._exit(0)
        _detach(listener.fileno())
        _serve(listener, path)
    except BaseException:  # noqa: BLE001 - a server that cannot serve is simply not there
        pass
    finally:
        os._exit(0)


def _detach(keep: int) -> None:
    """Standard streams to /dev/null; every descriptor the first caller inherited closed (a pipe, a terminal, a
    lock held by ``flock LOCK grade check``: those are inheritable, what Python opens itself is not), and its
    pipes, terminals and sockets whatever their flags; out of the caller's folder."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for fd in range(3, 1024):
        if fd == keep:
            continue
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if os.get_inheritable(fd) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode):
            with contextlib.suppress(OSError):
                os.close(fd)
    os.chdir("/")  # each check goes to its caller's folder; the server holds none
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def _idle_seconds() -> float:
    try:
        return max(0.1, float(os.environ.get(IDLE_ENV, IDLE_SECONDS)))
    except ValueError:
        return IDLE_SECONDS


def _serve(listener: socket.socket, path: Path) -> None:
    """Fork a child per check; when a child ends, its exit status goes back to its caller (the child itself holds
    no channel to the caller: its workers, forked from it, could otherwise write on it)."""
    import select  # noqa: PLC0415 - the server's own

    idle = _idle_seconds()
    ours = os.stat(path).st_ino
    last = time.monotonic()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    callers: dict[int, socket.socket] = {}  # a running check's pid -> its caller's connection
    heard: dict[socket.socket, int] = {}  # the callers still there, watched: one that goes, ends its check
    server = os.getpid()  # what each check dies with
    while True:
        ready = select.select([listener, wake_r, *heard], [], [], min(idle, 2.0))[0]
        if wake_r in ready:
            with contextlib.suppress(OSError):
                os.read(wake_r, 4096)
        for conn in [c for c in ready if c in heard]:
            _end_if_gone(conn, heard)
        _answer_ended(callers)
        heard = {c: pid for c, pid in heard.items() if pid in callers}
        if listener not in ready:
            if callers:
                last = time.monotonic()
                continue
            try:
                replaced = os.stat(path).st_ino != ours
            except OSError:
                replaced = True
            if replaced or time.monotonic() - last >= idle:
                with contextlib.suppress(OSError):
                    if not replaced:
                        path.unlink()
                return
            continue
        last = time.monotonic()
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        conn.settimeout(10.0)
        try:
            request, fds = _receive(conn)
        except (OSError, ValueError):
            conn.close()
            continue
        if request is None:
            for fd in fds:
                os.close(fd)
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (wake_r, wake_w):
                os.close(fd)
            listener.close()
            for other in (*callers.values(), conn):
                other.close()
            _child(request, fds, server)  # never returns
        for fd in fds:
            os.close(fd)
        try:
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        except OSError:
            pass  # the caller is gone already: seen at once as gone, below
        conn.setblocking(False)
        callers[pid] = conn
        heard[conn] = pid


def _end_if_gone(conn: socket.socket, heard: dict[socket.socket, int]) -> None:
    """A caller says nothing after its request: readable means it is gone (Ctrl-C before it heard the check's
    pid, killed, its terminal closed). Its check, which writes to that caller's terminal, is ended with it."""
    try:
        data = conn.recv(4096)
    except BlockingIOError:
        return
    except OSError:
        data = b""
    if data:
        return  # not ours to read: ignored
    pid = heard.pop(conn)
    for kill in (os.killpg, os.kill):  # its group; the check itself, should it not have made its group yet
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)


def _answer_ended(callers: dict[int, socket.socket]) -> None:
    """Reap every ended child; tell each one's caller its exit status."""
    for pid, status in ended_children():
        conn = callers.pop(pid, None)
        if conn is not None:
            code = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):
                conn.setblocking(True)
                conn.settimeout(5.0)
                conn.sendall(json.dumps({"exit": code if code >= 0 else 1}).encode() + b"\n")
            conn.close()


def _peer_is_us(conn: socket.socket) -> bool:
    if not hasattr(socket, "SO_PEERCRED"):
        return True  # the folder (0700) keeps others out
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[4:8], sys.byteorder) == os.getuid()


def _receive(conn: socket.socket) -> tuple[dict | None, list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    if len(fds) != 3 or len(data) < 8 or not _peer_is_us(conn):
        return None, fds
    size = int.from_bytes(data[:8], "big")
    if size > MAX_REQUEST:
        return None, fds
    body = data[8:]
    while len(body) < size:
        chunk = conn.recv(min(65536, size - len(body)))
        if not chunk:
            return None, fds
        body += chunk
    request = json.loads(body)
    return (request if type(request) is dict else None), fds


def _child(request: dict, fds: list[int], server: int) -> None:  # pragma: no cover - a check's own process
    """One check, in the caller's streams, folder and environment; its exit status is this process's."""
    code = 1
    try:
        die_with_parent(server)  # a server killed mid-check takes its checks with it
        os.setpgid(0, 0)  # the caller ends this group on Ctrl-C
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.umask(int(request.get("umask", 0o022)))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})
        os.environ[ENV] = "0"  # this check runs here: it neither asks a server nor leaves one
        for stream, (encoding, errors) in zip((sys.stdout, sys.stderr), request.get("encoding") or [[None, None]] * 2):
            with contextlib.suppress(Exception):  # as the caller's own streams: encoding, errors handler, buffering
                stream.reconfigure(encoding=encoding or stream.encoding, errors=errors or stream.errors,
                                   line_buffering=os.isatty(stream.fileno()))
        code = _check(request["options"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - as an uncaught error of grade check: its traceback, status 1
        import traceback  # noqa: PLC0415 - only on a failure

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code & 0xFF)


def _check(options: dict) -> int:
    """``grade check`` with these options, run as the command line runs it (``cli._run``: the same words for a
    usage error, the same exit status)."""
    from autograder.cli import _run  # noqa: PLC0415 - warm here (the student bundle's cli.py keeps it)
    from autograder.commands import check as verb  # noqa: PLC0415 - warm here

    html_file = options.get("html_file")
    try:
        _run(verb.main, path=None if options.get("path") is None else Path(options["path"]),
             steps=tuple(options.get("steps") or ()), as_json=bool(options.get("as_json")),
             color=bool(options.get("color")), watch=False,
             html_file=html_file if html_file is None or isinstance(html_file, bool) else Path(html_file))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
