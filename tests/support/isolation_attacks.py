"""Submissions that try to get at what the sandbox keeps from them, each with the honest control it is measured by.

Each attack starts from the untouched stubs (``exercises/``, 0 points) or from a correct submission (``alice``), and
adds code that runs when its modules are imported. Whatever it gains shows as points above its control's:

* ``reference_thief``: finds where the instructor's files are (the command lines of every process, its own frames'
  file names, the environment, the machine's other copies of the course) and execs ``solutions/<module>.py`` over
  the stubs; ``service``: a loopback TCP service that hands out the reference (as a careless local service would):
  the thief connects and execs what it is sent;
* ``classmate_reader``: looks for a classmate's staged files (``<staging>/<name>/<module>.py``) and execs them;
* ``stash_writer`` and ``stash_reader``: a correct submission leaves its code in ``/tmp``, ``/dev/shm`` and the
  grading user's home (and in the kit's own folder there); the reader, the stubs, execs any stash it finds.

Used by tests/integration/test_isolation.py (root's levels) and tests/system/test_normal_user.py (a normal user's).
"""
from __future__ import annotations

import shutil
import socket
import threading
from pathlib import Path

from tests.conftest import ROOT

MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]
SAMPLES = ROOT / "samples" / "submissions"

_THIEF = '''

def _steal(_module={module!r}, _token={token!r}, _port={port!r}, _extra={extra!r}):
    """Find the reference (any readable solutions/<module>.py) and run it in place of the stubs."""
    import glob, os, socket, sys
    seen = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if pid.isdigit():
            try:
                seen += open(f"/proc/{{pid}}/cmdline", "rb").read().decode(errors="replace").split("\\0")
            except OSError:
                pass
    frame = sys._getframe()
    while frame is not None:
        seen.append(frame.f_code.co_filename)
        frame = frame.f_back
    seen += list(os.environ.values()) + list(_extra)
    for pattern in ("/home/*/*", "/work/*", "/tmp/*", "/tmp/*/*"):
        seen += glob.glob(pattern)
    roots = []
    for path in seen:
        while path and path not in ("/", "."):
            if path not in roots and _token in path:
                roots.append(path)
            path = os.path.dirname(path)
    for root in roots:
        try:
            with open(os.path.join(root, "solutions", _module + ".py")) as fh:
                code = fh.read()
        except OSError:
            continue
        exec(compile(code, "stolen", "exec"), globals())
        return
    if _port:
        try:
            with socket.create_connection(("127.0.0.1", _port), timeout=2) as sock:
                sock.sendall(_module.encode() + b"\\n")
                code = b"".join(iter(lambda: sock.recv(65536), b"")).decode()
            exec(compile(code, "served", "exec"), globals())
        except (OSError, SyntaxError):
            pass


_steal()
'''

_CLASSMATE = '''

def _copy_a_classmate(_module={module!r}, _name={name!r}):
    """Run a classmate's staged module in place of the stubs, if any can be read."""
    import glob, os, tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    places = [os.path.join(os.path.dirname(here), _name, _module + ".py")]
    for base in {{"/tmp", tempfile.gettempdir(), os.environ.get("TMPDIR", "/tmp")}}:
        places += glob.glob(os.path.join(base, "grade-staging-*", _name, _module + ".py"))
        places += glob.glob(os.path.join(base, "grade-staging-*", "*", _name, _module + ".py"))
    for path in places:
        try:
            with open(path) as fh:
                code = fh.read()
        except OSError:
            continue
        exec(compile(code, "copied", "exec"), globals())
        return


_copy_a_classmate()
'''

_WRITER = '''

def _leave_a_stash(_module={module!r}, _places={places!r}):
    """Leave this (correct) module's code where a later submission might find it."""
    import os
    with open(__file__) as fh:
        code = fh.read().split("\\n\\ndef _leave_a_stash")[0]
    for folder in _places:
        try:
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "agx-stash-" + _module + ".py"), "w") as fh:
                fh.write(code)
        except OSError:
            pass


_leave_a_stash()
'''

_READER = '''

def _read_a_stash(_module={module!r}, _places={places!r}):
    """Run a stash an earlier submission left, in place of the stubs."""
    import os
    for folder in _places:
        try:
            with open(os.path.join(folder, "agx-stash-" + _module + ".py")) as fh:
                code = fh.read()
        except OSError:
            continue
        exec(compile(code, "stash", "exec"), globals())
        return


_read_a_stash()
'''


def stubs(folder: Path) -> Path:
    """The untouched stubs: every attack built on them is measured against this (0 points)."""
    folder.mkdir(parents=True)
    for module in MODULES:
        shutil.copyfile(ROOT / "exercises" / f"{module}.py", folder / f"{module}.py")
    return folder


def correct(folder: Path, name: str = "alice") -> Path:
    shutil.copytree(SAMPLES / name, folder)
    return folder


def _append(folder: Path, template: str, **values) -> Path:
    for module in MODULES:
        path = folder / f"{module}.py"
        path.write_text(path.read_text() + template.format(module=module, **values))
    return folder


def reference_thief(folder: Path, token: str, port: int | None = None, extra: tuple[str, ...] = ()) -> Path:
    """The stubs, and a search for the reference among the paths that contain ``token`` (the kit's copy under test:
    other copies on a shared machine are not this test's), then a loopback service on ``port``."""
    return _append(stubs(folder), _THIEF, token=token, port=port, extra=list(extra))


def classmate_reader(folder: Path, classmate: str) -> Path:
    return _append(stubs(folder), _CLASSMATE, name=classmate)


def stash_writer(folder: Path, places: list[str]) -> Path:
    return _append(correct(folder), _WRITER, places=places)


def stash_reader(folder: Path, places: list[str]) -> Path:
    return _append(stubs(folder), _READER, places=places)


def stashes(places: list[str]) -> list[Path]:
    """The stash files a writer could have left."""
    return [Path(p) / f"agx-stash-{m}.py" for p in places for m in MODULES]


class Service:
    """A TCP service on loopback that sends the reference module asked for to whoever connects; ``visits`` counts
    the connections it accepted."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.visits = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.visits += 1
                try:
                    module = conn.makefile("rb").readline().decode().strip()
                    if module in MODULES:
                        conn.sendall((ROOT / "solutions" / f"{module}.py").read_bytes())
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


def kit_copy(dest: Path) -> Path:
    """A copy of the kit and the course where a test decides who may read it (the checkout's own modes are the
    machine's): the ``autograder`` package, ``solutions/``, ``exercises/``, ``course.yml`` and ``pyproject.toml``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("autograder", "solutions", "exercises"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for name in ("course.yml", "pyproject.toml"):
        shutil.copyfile(ROOT / name, dest / name)
    return dest
