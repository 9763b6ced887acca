"""The student's warm ``grade check``: one process per user that holds torch, the checking code and the public
cases, and answers every check: the terminal's ``grade check`` and each notebook's ``%grade check``.

Both halves of the protocol are here, side by side (as CPython's ``multiprocessing/forkserver.py`` keeps its own):
the clients, and the server. A terminal's ``grade check`` hands its own standard input, output and error to the
server (``SCM_RIGHTS``, as Mercurial's ``chg``), with its folder, environment and options; a notebook's ``%grade
check`` (``check/magic.py``) hands it the cells the kernel ran, and is answered the text and HTML to show. The
server forks a child for each check, which runs ``check/checking.py`` (the command line's own pipeline, in-process):
so what is printed, where and in which colours, the page written and the exit status are the same as without a
server. Each check is a fresh fork: nothing a check did (its workers, a submission's code, which only ever runs in a
worker forked from the child) is in the server. The child holds no channel to its caller: a terminal's exit status,
and a notebook's answer (a file in the server's own folder), go back through the server.

The first terminal check, done in-process, leaves the server behind (``start``: a fork of that process); a notebook
starts one as ``python -m autograder.check.warm_server`` (``ensure_started``). The server listens on a Unix socket
named after everything that could change an answer (the interpreter, the kit's files and their times, the public
cases, ``AUTOGRADER_*`` settings, the niceness and resource limits a check would inherit): reinstalling the kit or
editing it makes a new name, and the old server, unused, ends after ``GRADE_CHECK_SERVER_IDLE`` seconds (default
600) like any idle one. It lives in a folder of the user's own, mode 0700 (``$XDG_RUNTIME_DIR``, else the temporary
folder), made and checked by ``worker/owned_dirs.py``: a folder of that name that another user made first (or a
link) is never used, and each check says so in one line and runs without it. On Linux the server answers only its
own user, and a client talks only to a server of its own (``SO_PEERCRED``).

``GRADE_CHECK_SERVER=0`` turns it off (each check then loads torch itself, as on Windows, which has no ``fork``).
A caller that goes (Ctrl-C, the notebook's stop button, a killed kernel) ends its check's whole process group.
tests/integration/test_check_warm_server.py and tests/system/test_magic.py show each of these.
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
#: how long a check whose caller went may take to end itself (its workers, its folders) before it is killed
GRACE_SECONDS = 10.0
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
        import resource

        for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_")):
            with contextlib.suppress(OSError, ValueError):
                parts.append(f"{name} {resource.getrlimit(getattr(resource, name))}")
    with contextlib.suppress(AttributeError, OSError):
        parts.append(f"cpus {sorted(os.sched_getaffinity(0))}")
    return "\n".join(parts)


def socket_path() -> Path | None:
    return _socket_in(_folder()[0])


def refusal() -> str:
    """Why there is no socket for a warm server here, in one line."""
    folder, refused = _folder()
    return refused or f"{folder}: its path is too long for a Unix socket"


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


def _connect(path: Path | None) -> socket.socket | None:
    """A connection to this user's server at ``path``; None where none answers (no socket, a server that ended: its
    socket is replaced by the next one) or where the peer is not of our uid (a terminal or a notebook's cells are
    never handed to another user's process: the folder is ours alone, and ``SO_PEERCRED`` says so too)."""
    if path is None or not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    if not _peer_is_us(sock):
        sock.close()
        return None
    return sock


def run_served(options: dict) -> int | None:
    """The exit status of this check, done by the warm server; None where there is none (check here, then)."""
    folder, refused = _folder()
    if refused:  # said at every check: slower, never in silence
        print(f"note: no warm grade check server: {refused}; each check loads torch itself ({DIR_ENV} names "
              f"another folder, {ENV}=0 turns the server off)", file=sys.stderr, flush=True)
    sock = _connect(_socket_in(folder))
    if sock is None:
        return None
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    request = json.dumps({"options": options, "cwd": os.getcwd(), "env": dict(os.environ),
                          "encoding": [[getattr(stream, "encoding", None), getattr(stream, "errors", None)]
                                       for stream in (sys.stdout, sys.stderr)],
                          "umask": _umask()}).encode()
    started = False
    with sock:
        try:
            socket.send_fds(sock, [len(request).to_bytes(8, "big") + request], [0, 1, 2])
            for answer in _lines(sock):
                started = started or "pid" in answer
                if "exit" in answer:
                    return int(answer["exit"])
        except (OSError, ValueError):
            pass
        # Ctrl-C (KeyboardInterrupt) closes the connection too: the server then ends the check, as in-process
    if not started:
        return None  # nothing was started: check here
    print("error: the warm grade check server ended this check without an answer; run it again "
          f"({ENV}=0 checks without it)", file=sys.stderr, flush=True)
    return 1


def ask(request: dict) -> dict | None:
    """A notebook's check (``request``: the cells and what to check, ``check/magic.py``) answered by the warm server:
    ``{"text", "html", "passed", "page", "problems", "seconds"}`` or ``{"error"}``; None where no server answers.
    An interrupt (the stop button) closes the connection, which ends the check and its workers, and is raised."""
    sock = _connect(socket_path())
    if sock is None:
        return None
    body = json.dumps({**request, "kind": "notebook", "cwd": os.getcwd(), "env": dict(os.environ),
                       "umask": _umask()}).encode()
    started = False
    with sock:
        try:
            sock.sendall(len(body).to_bytes(8, "big") + body)
            for answer in _lines(sock):
                started = started or "pid" in answer
                if "exit" in answer:
                    return answer.get("answer") or {"error": "the check ended without an answer (exit status "
                                                             f"{answer['exit']}); run it again"}
        except (OSError, ValueError):
            pass
    return {"error": "the warm grade check server ended this check without an answer; run it again"} if started \
        else None


def ensure_started(seconds: float = 600.0) -> str | None:
    """A warm server for this user, started (``python -m autograder.check.warm_server``, which loads torch and the
    public cases, then leaves the server and ends) unless one answers already; None once it listens, else why not
    (what the starting process said). An interrupt while it loads ends it: no process of ours is left loading."""
    import subprocess

    starting = subprocess.Popen([sys.executable, "-m", "autograder.check.warm_server"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, said = starting.communicate(timeout=seconds)
    except BaseException:  # the stop button while torch loads, or too long: the loading process and its group end
        with contextlib.suppress(OSError):
            os.killpg(starting.pid, signal.SIGKILL)
        starting.wait()
        raise
    if starting.returncode != 0:
        return said.decode(errors="replace")[-2000:].strip() or f"it ended with status {starting.returncode}"
    return None


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
    import select

    idle = _idle_seconds()
    ours = os.stat(path).st_ino
    last = time.monotonic()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    callers: dict[int, tuple[socket.socket, str]] = {}  # a running check's pid -> its caller's connection, its kind
    heard: dict[socket.socket, int] = {}  # the callers still there, watched: one that goes, ends its check
    ending: dict[int, float] = {}  # a check whose caller went -> when it is killed, should it not have ended by then
    server = os.getpid()  # what each check dies with
    while True:
        ready = select.select([listener, wake_r, *heard], [], [], min(idle, 2.0))[0]
        if wake_r in ready:
            with contextlib.suppress(OSError):
                os.read(wake_r, 4096)
        for conn in [c for c in ready if c in heard]:
            _end_if_gone(conn, heard, ending)
        _answer_ended(callers, path.parent)
        for pid, deadline in list(ending.items()):
            if pid not in callers:
                del ending[pid]
            elif time.monotonic() > deadline:
                for kill in (os.killpg, os.kill):
                    with contextlib.suppress(OSError):
                        kill(pid, signal.SIGKILL)
                del ending[pid]
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
            for other in (*(c for c, _ in callers.values()), conn):
                other.close()
            _child(request, fds, server, path.parent)  # never returns
        for fd in fds:
            os.close(fd)
        try:
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        except OSError:
            pass  # the caller is gone already: seen at once as gone, below
        conn.setblocking(False)
        callers[pid] = (conn, request["kind"])
        heard[conn] = pid


def _end_if_gone(conn: socket.socket, heard: dict[socket.socket, int], ending: dict[int, float]) -> None:
    """A caller says nothing after its request: readable means it is gone (Ctrl-C, the stop button, killed, its
    terminal closed). Its check is interrupted, as Ctrl-C interrupts an in-process check: it ends its workers and
    removes its folders; one that has not ended ``GRACE_SECONDS`` later is killed with its whole process group."""
    try:
        data = conn.recv(4096)
    except BlockingIOError:
        return
    except OSError:
        data = b""
    if data:
        return  # not ours to read: ignored
    pid = heard.pop(conn)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGINT)
    ending[pid] = time.monotonic() + GRACE_SECONDS


def _answer_ended(callers: dict[int, tuple[socket.socket, str]], folder: Path) -> None:
    """Reap every ended child; tell each one's caller its exit status, and a notebook its answer."""
    for pid, status in ended_children():
        conn, kind = callers.pop(pid, (None, None))
        answer = None
        if kind == "notebook":
            with contextlib.suppress(OSError, ValueError):
                answer = json.loads(_answer_file(folder, pid).read_text(encoding="utf-8"))
            with contextlib.suppress(OSError):
                _answer_file(folder, pid).unlink()
        if conn is not None:
            code = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):
                conn.setblocking(True)
                conn.settimeout(5.0)
                conn.sendall(json.dumps({"exit": code if code >= 0 else 1, "answer": answer}).encode() + b"\n")
            conn.close()


def _answer_file(folder: Path, pid: int) -> Path:
    return folder / f"answer-{pid}.json"


def _peer_is_us(conn: socket.socket) -> bool:
    if not hasattr(socket, "SO_PEERCRED"):
        return True  # the folder (0700) keeps others out
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[4:8], sys.byteorder) == os.getuid()


def _receive(conn: socket.socket) -> tuple[dict | None, list[int]]:
    """A request and its descriptors: a terminal's hands its three standard streams, a notebook's none."""
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    if len(data) < 8 or not _peer_is_us(conn):
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
    if type(request) is not dict:
        return None, fds
    request["kind"] = "notebook" if request.get("kind") == "notebook" and not fds else "terminal"
    return (request if request["kind"] == "notebook" or len(fds) == 3 else None), fds


def _child(request: dict, fds: list[int], server: int, folder: Path) -> None:  # pragma: no cover - a check's own
    """One check, in the caller's folder and environment (a terminal's: in its streams too); its exit status is this
    process's, a notebook's answer the file the server relays."""
    code = 1
    try:
        die_with_parent(server)  # a server killed mid-check takes its checks with it
        os.setpgid(0, 0)  # a caller that goes ends this group
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
        if request["kind"] == "notebook":
            code = _notebook(request, _answer_file(folder, os.getpid()))
        else:
            for stream, (encoding, errors) in zip((sys.stdout, sys.stderr),
                                                  request.get("encoding") or [[None, None]] * 2):
                with contextlib.suppress(Exception):  # as the caller's own streams: encoding, errors, buffering
                    stream.reconfigure(encoding=encoding or stream.encoding, errors=errors or stream.errors,
                                       line_buffering=os.isatty(stream.fileno()))
            code = _terminal(request["options"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:  # its caller went: its workers and folders are gone (the finally clauses), said to none
        code = 130
    except BaseException:  # noqa: BLE001 - as an uncaught error of grade check: its traceback, status 1
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code & 0xFF)


def _terminal(options: dict) -> int:
    """``grade check`` with these options, as the command line runs it: the same words for a usage error, the same
    exit status (``usage.exit_status``)."""
    from autograder.check import checking
    from autograder.usage import exit_status

    html_file = options.get("html_file")
    return exit_status(checking.terminal_check, path=None if options.get("path") is None else Path(options["path"]),
                       steps=tuple(options.get("steps") or ()), data=checking.load(),
                       as_json=bool(options.get("as_json")), color=bool(options.get("color")),
                       html_file=html_file if html_file is None or isinstance(html_file, bool) else Path(html_file))


def _notebook(request: dict, answer_file: Path) -> int:
    """A notebook's check, its answer written (0600, a new file) where the server reads it."""
    from autograder.check import checking

    answer = checking.answer_cells(request)
    fd = os.open(answer_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(answer, out)
    return 0


def main() -> int:
    """``python -m autograder.check.warm_server``: load what a check needs, leave the server, end (``ensure_started``).
    What stops it (no folder of ours, a broken torch) is said on standard error, with status 1."""
    if not enabled():
        print(f"no warm grade check server here ({ENV}=0, or no fork)", file=sys.stderr)
        return 1
    folder, refused = _folder()
    if folder is None:
        print(refused, file=sys.stderr)
        return 1
    from autograder.check import checking
    from autograder.usage import UsageError

    try:
        checking.load()
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 1
    start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
