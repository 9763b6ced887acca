"""The kit's journeys as a normal user takes them, on a machine that other users (root among them) share.

- ``make demo`` in a fresh clone: it installs the kit into the clone's ``.venv`` (torch from pip's own sources: here
  the local wheel pip's ``find-links`` names) and grades the bundled samples in a sandbox that is not ``rlimits``,
  writing nothing outside the clone and the user's own folders; root's uid lock folder and a second user's folders of
  the kit's names in /tmp are there before, and change nothing.
- ``grade check`` in a terminal and ``%grade check`` in a real kernel (nbclient) of the user's: one warm server, shared
  by both, small; a second user's server is another, which cannot be reached from that user's side; a folder of the
  server's name squatted by the second user is said in one line, and the checks still give the right verdict.

Each user runs the system's Python with ``PYTHONPATH`` on this environment's packages and this checkout
(``local_users``): a normal user cannot run this environment's own interpreter. The warm server's folder is the
default one (``$TMPDIR/attention-grade-<uid>``), in a temporary folder the test makes like /tmp (sticky, 1777) and
gives both users as ``TMPDIR``: their own folders are never those of a concurrent run's.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from autograder.worker import locks
from autograder.worker.leftovers import SHARED_DIRS

from .conftest import ROOT
from tests.support.local_users import (chown_tree, is_root, normal_user, other_user, owned, python_for, run_as,
                                      site_packages, temporary_folder, user_of_its_own)
from tests.support.submission_forms import one_notebook

pytestmark = [pytest.mark.skipif(os.uname().sysname != "Linux",
                                 reason="local users, SO_PEERCRED and /proc are Linux's")]

SAMPLES = ROOT / "samples" / "submissions"
#: what make demo grades the bundled samples (their scores are the samples' own: samples/README)
SAMPLE_SCORES = {"alice": 81, "bob": 78, "carol": 76, "dave": 0}
PASSED_IN_A_TERMINAL = "public checks                                                  54/54"
PASSED_IN_A_NOTEBOOK = "public checks passed; hidden cases are graded later (54/54)"
NOT_USED = "note: no warm grade check server: "
#: the warm server's memory after the checks, as the machine counts it (PSS: its shared pages divided among sharers)
MAX_PSS_MIB = 200


def _waited(condition, seconds: float, every: float = 0.1):
    """``condition()`` asked every ``every`` seconds until it holds or ``seconds`` have passed; its last answer."""
    deadline = time.monotonic() + seconds
    found = condition()
    while not found and time.monotonic() < deadline:
        time.sleep(every)
        found = condition()
    return found


# -- make demo ------------------------------------------------------------------------------------------------------
def _fresh_clone(dest: Path, user) -> Path:
    """The checkout's tracked files, as a clone gives them (no .venv, no results/), the user's."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    chown_tree(user, dest)
    return dest


def _writable_by_all() -> list[str]:
    return [d for d in SHARED_DIRS if os.path.isdir(d) and not os.path.islink(d)]


@pytest.fixture
def shared_before():
    """What root and a second user left before: root's uid lock folder (``locks.lock_dir``), and in /tmp the second
    user's warm server folder (their ``grade check``, its server ended) and a uid lock folder of that name they made;
    what this made is removed after. As a normal user, nothing: no second user can be made, and only root's
    graders keep uid locks."""
    if not is_root():
        yield
        return
    _, fd = locks.lock_dir()  # root's, made if missing: /run/attention-autograder-uids on this machine
    os.close(fd)
    other = other_user()
    theirs = Path("/tmp") / f"attention-grade-{other.uid}"
    squat = Path("/tmp/attention-autograder-uids")
    made = [p for p in (theirs, squat) if not os.path.lexists(p)]
    python = python_for(other)
    env = {"PYTHONPATH": f"{site_packages()}:{ROOT}", "GRADE_CHECK_SERVER": "1", "GRADE_CHECK_SERVER_IDLE": "1"}
    checked = run_as(other, [python, "-m", "autograder.cli", "check", str(SAMPLES / "alice")], env=env, cwd="/")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    if squat in made:
        run_as(other, ["mkdir", "-m", "0777", str(squat)], cwd="/", check=True)
    assert theirs.is_dir() and theirs.stat().st_uid == other.uid
    try:
        yield
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)


def test_make_demo_in_a_fresh_clone_as_a_normal_user(shared_before):
    """A fresh clone's ``make demo``: its real install (a venv, torch from the local wheel, the kit from pip's
    sources; not the test tools, which only ``make test`` installs), then the samples graded in a sandbox of the
    user's (the level said on the isolation line), nothing written outside the clone and the user's own folders.
    25 s here unloaded (89 to 155 s when it installed the test tools too), nearly all of it the install (the kit's
    packages downloaded from PyPI: pip keeps no cache here, and none is shared or kept between runs, so an install
    that fails fails here; only torch is local, the wheel pip's ``find-links`` names); the controls and removing the
    clone, seconds.

    What the run leaves in the folders every user may write in is told from what others leave there meanwhile: as
    root it runs as a user of its own (``user_of_its_own``: a normal user's run of the suite beside this one, or any
    other test, runs as another), and everything of theirs that appears there is the run's; as a normal user, the
    suite's other tests are the same user (even a warm server's folder of the kit's name may be theirs), so only the
    run's temporary folder is its alone (``TMPDIR``, a folder of its own in both cases, empty after); root's run of the
    suite beside it makes its notebook journeys' folders (``Desk``) in this same student user's home, so those are not
    counted as the run's. Controls: the same ``grade`` at ``rlimits`` says so on the same line; a file the user leaves
    in /tmp (as root) and in its temporary folder is seen by the same comparison."""
    alone = user_of_its_own()
    user = alone or normal_user()
    clone = user.home / f"agx-fresh-clone-{os.getpid()}"
    shutil.rmtree(clone, ignore_errors=True)
    tmp = temporary_folder(user, "agx-demo-tmp-")  # the run's TMPDIR
    env = {"TMPDIR": str(tmp)}
    home_before = {p.name for p in user.home.iterdir()}
    cache_before = {p.name for p in (user.home / ".cache").iterdir()} if (user.home / ".cache").is_dir() else set()
    shared = {d: owned(user, d) for d in _writable_by_all()}

    def left_in_shared() -> dict[str, set[str]]:
        return {d: owned(user, d) - before - {str(tmp)} for d, before in shared.items()}

    try:
        _fresh_clone(clone, user)
        started = time.monotonic()
        done = run_as(user, ["make", "demo"], cwd=clone, timeout=1800, env=env)
        seconds = time.monotonic() - started
        said = done.stdout + done.stderr
        assert done.returncode == 0, said
        print(f"make demo as {user.name}: {seconds:.0f} s")
        assert "torch 2.13.0+cpu (CPU build)" in said  # pip's find-links: the local wheel
        site = clone / ".venv" / "lib" / "python3.11" / "site-packages"
        assert (site / "torch").is_dir() and not (site / "nbgrader").exists(), "make demo installed the test tools"
        scores = {p.parent.name: json.loads(p.read_text())["score"] for p in (clone / "results").glob("*/results.json")}
        assert scores == SAMPLE_SCORES, said
        level = next(line for line in done.stdout.splitlines() if line.startswith("isolation: "))
        print(level)
        assert not level.startswith("isolation: rlimits"), level
        # nothing outside the clone and the user's own folders: their home gains the clone (and caches: pip's, the
        # kit's reference answers), their temporary folder is left empty, the folders every user may write in gain
        # nothing of theirs
        gained = {p.name for p in user.home.iterdir()} - home_before
        if not alone:  # a notebook journey's folder (Desk) may be another run's: root's suite runs them as this user
            gained = {name for name in gained if not name.startswith(DESK_PREFIX)}
        assert gained <= {clone.name, ".cache"}
        assert {p.name for p in (user.home / ".cache").iterdir()} - cache_before <= {"pip", "attention-autograder"}
        assert sorted(os.listdir(tmp)) == []
        if alone:
            assert left_in_shared() == {d: set() for d in shared}
        # the controls: the same grade at rlimits says so there; a file the user leaves is seen
        controls = time.monotonic()
        trusted = run_as(user, [".venv/bin/grade", "autograde", "samples/submissions", "--out", "results-rlimits",
                                "--trust-submissions"], cwd=clone, env={**env, "AUTOGRADER_ISOLATION": "rlimits"})
        assert trusted.returncode == 0 and "\nisolation: rlimits" in trusted.stdout, trusted.stdout + trusted.stderr
        in_tmp = run_as(user, ["mktemp"], cwd=clone, env=env, check=True).stdout.strip()
        assert os.listdir(tmp) == [Path(in_tmp).name]
        if alone:
            left = run_as(user, ["mktemp", "/tmp/agx-left-XXXXXX"], cwd=clone, check=True).stdout.strip()
            try:
                assert left_in_shared()["/tmp"] == {left}
            finally:
                os.unlink(left)
        print(f"the controls: {time.monotonic() - controls:.0f} s")
    finally:
        removing = time.monotonic()
        shutil.rmtree(clone, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"the clone removed: {time.monotonic() - removing:.0f} s")


# -- grade check and %grade check -----------------------------------------------------------------------------------
#: the name of a Desk's folder in its user's home begins so
DESK_PREFIX = "agx-journey-"


class Desk:
    """A user's folder in their home with alice's notebook, and the temporary folder both users share."""

    def __init__(self, user, tmp: Path):
        self.user, self.tmp = user, tmp
        self.folder = user.home / f"{DESK_PREFIX}{tmp.name}"
        shutil.rmtree(self.folder, ignore_errors=True)
        self.notebook = one_notebook(SAMPLES / "alice", self.folder, name="alice.ipynb")
        chown_tree(user, self.folder)
        self.python = python_for(user)

    def env(self, **extra) -> dict:
        return {"PYTHONPATH": f"{site_packages()}:{ROOT}", "GRADE_CHECK_SERVER": "1", "TMPDIR": str(self.tmp),
                **extra}

    @property
    def server_folder(self) -> Path:
        return self.tmp / f"attention-grade-{self.user.uid}"

    def check(self, **env) -> subprocess.CompletedProcess:
        """``grade check alice.ipynb`` in a terminal of the user's."""
        return run_as(self.user, [self.python, "-m", "autograder.cli", "check", self.notebook.name],
                      cwd=self.folder, env=self.env(**env))

    def notebook_checks(self, *cells: str) -> list[dict]:
        """The notebook run in a kernel of the user's, ``cells`` at its end: what each showed."""
        request = self.folder / "request.json"
        request.write_text(json.dumps({"notebook": str(self.notebook), "cells": list(cells)}))
        os.chown(request, self.user.uid, self.user.gid)
        done = run_as(self.user, [self.python, "-m", "tests.support.notebook_as_user", str(request)], cwd=self.folder,
                      env=self.env())
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    def kit_processes(self) -> list[int]:
        """The user's processes of the kit's in this shared temporary folder (the kernel is not one: it imports only
        the magic)."""
        import psutil  # noqa: PLC0415 - ipykernel's own dependency

        found = []
        for p in psutil.process_iter(["cmdline", "uids"]):
            with contextlib.suppress(psutil.Error):
                line = " ".join(p.info["cmdline"] or [])
                if p.info["uids"].real == self.user.uid and "autograder" in line and "ipykernel" not in line and \
                        p.environ().get("TMPDIR") == str(self.tmp):
                    found.append(p.pid)
        return sorted(found)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def machine():
    """(``Desk(user, tmp)`` for a normal user, the same for a second user, the shared temporary folder). After: the
    shared folder removed, which ends each server (its socket gone) within seconds; one still there is killed."""
    import psutil  # noqa: PLC0415 - ipykernel's own dependency

    user, other = normal_user(), other_user()
    tmp = Path(tempfile.mkdtemp(prefix="agx-", dir="/tmp"))
    os.chmod(tmp, 0o1777)
    desks = [Desk(user, tmp), Desk(other, tmp)]
    try:
        yield desks[0], desks[1], tmp
    finally:
        left = [pid for desk in desks for pid in desk.kit_processes()]
        shutil.rmtree(tmp, ignore_errors=True)
        _, alive = psutil.wait_procs([psutil.Process(pid) for pid in left if psutil.pid_exists(pid)], timeout=30)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        for desk in desks:
            desk.close()


def _pss_mib(pid: int) -> float:
    """The process's proportional set size, from /proc/PID/smaps_rollup, in MiB."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no Pss in /proc/{pid}/smaps_rollup")


def _children_cpu(pid: int) -> float:
    import psutil  # noqa: PLC0415 - ipykernel's own dependency

    times = psutil.Process(pid).cpu_times()
    return times.children_user + times.children_system


def test_a_terminal_check_leaves_the_one_warm_server_the_notebook_asks(machine):
    """The user's ``grade check`` leaves one warm server; their kernel's ``%grade check`` (twice) is answered by it:
    still one process of the kit's for that user, its children (the checks) ran meanwhile, and its memory after the
    checks is at most ``MAX_PSS_MIB``. Control: the same terminal check with the server off leaves none."""
    desk, _, _ = machine
    off = desk.check(GRADE_CHECK_SERVER="0")
    assert off.returncode == 0 and PASSED_IN_A_TERMINAL in off.stdout, off.stdout + off.stderr
    assert desk.kit_processes() == []
    first = desk.check()
    assert first.returncode == 0 and PASSED_IN_A_TERMINAL in first.stdout, first.stdout + first.stderr
    assert NOT_USED not in first.stderr
    servers = _waited(desk.kit_processes, seconds=60)
    assert len(servers) == 1
    before = _children_cpu(servers[0])
    shown = desk.notebook_checks("%grade check", "%grade check")
    for cell in shown:
        assert PASSED_IN_A_NOTEBOOK in cell["text"] and NOT_USED not in cell["stderr"], cell
    assert desk.kit_processes() == servers
    assert _children_cpu(servers[0]) > before  # the notebook's checks were its forks
    pss = _pss_mib(servers[0])
    print(f"the warm server's PSS after a terminal check and two notebook checks: {pss:.0f} MiB")
    assert pss <= MAX_PSS_MIB


def _raw_request(desk, path: Path, **env) -> list[dict]:
    """As ``desk``'s user: connect to the socket ``path``, send a notebook's request, read every line the server
    writes back until it closes; [] when it says nothing. An error (refused, no permission) is raised as it is."""
    script = (
        "import json, os, socket, sys\n"
        "body = json.dumps({'kind': 'notebook', 'cells': ['x = 1'], 'steps': [], 'said': 'x', 'notebook': None,\n"
        "                   'html': None, 'cwd': sys.argv[2], 'env': dict(os.environ), 'umask': 18}).encode()\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "s.settimeout(120)\n"
        "s.connect(sys.argv[1])\n"
        "s.sendall(len(body).to_bytes(8, 'big') + body)\n"
        "data = b''.join(iter(lambda: s.recv(65536), b''))\n"
        "print(json.dumps([json.loads(line) for line in data.splitlines()]))\n")
    done = run_as(desk.user, [desk.python, "-c", script, str(path), str(desk.folder)], cwd=desk.folder,
                  env=desk.env(**env))
    if done.returncode != 0:
        raise OSError(done.stderr.strip().splitlines()[-1])
    return json.loads(done.stdout)


def _lists(desk, folder: Path) -> bool:
    done = run_as(desk.user, [desk.python, "-c", "import os, sys; os.listdir(sys.argv[1])", str(folder)], cwd="/")
    return done.returncode == 0


def test_a_second_users_server_is_theirs_and_cannot_reach_the_first(machine):
    """Two users, one machine: each has a warm server of their own, in a folder of their own (0700). The second can
    neither list the first's folder nor connect to the first's socket; and where root takes both away (the socket
    linked into a folder all may enter, its mode opened), the first's server still answers only its own user
    (``SO_PEERCRED``). Control: the first user lists their folder, and is answered through the same link."""
    desk, second, tmp = machine
    for who in (desk, second):
        done = who.check()
        assert done.returncode == 0 and PASSED_IN_A_TERMINAL in done.stdout, done.stdout + done.stderr
    servers = {who.user.uid: _waited(who.kit_processes, seconds=60) for who in (desk, second)}
    assert all(len(pids) == 1 for pids in servers.values()) and servers[desk.user.uid] != servers[second.user.uid]
    for who in (desk, second):
        info = os.lstat(who.server_folder)
        assert stat.S_ISDIR(info.st_mode) and info.st_uid == who.user.uid and stat.S_IMODE(info.st_mode) == 0o700
    (sock,) = desk.server_folder.glob("*.sock")
    assert _lists(desk, desk.server_folder) and not _lists(second, desk.server_folder)
    with pytest.raises(OSError, match="PermissionError"):
        _raw_request(second, sock)
    # root lifts the folder's and the socket's own modes: a link to the same socket, in a folder all may enter
    opened = tmp / "opened"
    opened.mkdir(mode=0o755)
    os.link(sock, opened / "server.sock")
    os.chmod(opened / "server.sock", 0o666)
    assert _raw_request(second, opened / "server.sock") == []  # not even the check's pid: refused on connect
    answered = _raw_request(desk, opened / "server.sock")
    assert "pid" in answered[0] and answered[-1]["exit"] == 0 and answered[-1]["answer"], answered
    assert desk.kit_processes() == servers[desk.user.uid]


def test_a_squatted_server_folder_is_said_and_the_checks_still_answer(machine):
    """The second user made ``attention-grade-<first uid>`` in the shared temporary folder first (open to all): the
    first user's ``grade check`` and ``%grade check`` give the right verdict, each saying in one line that the warm
    server is not used and whose the folder is; nothing is left in that folder, and no server of theirs runs. The
    control: without the squat (another shared folder), no such line, and the server is used."""
    desk, second, tmp = machine
    run_as(second.user, ["mkdir", "-m", "0777", str(desk.server_folder)], cwd="/", check=True)
    done = desk.check()
    assert done.returncode == 0 and PASSED_IN_A_TERMINAL in done.stdout, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if NOT_USED in line]
    assert len(said) == 1 and f"belongs to {second.user.name} (uid {second.user.uid})" in said[0], done.stderr
    for cell in desk.notebook_checks("%grade check", "%grade check"):
        assert PASSED_IN_A_NOTEBOOK in cell["text"], cell
        said = [line for line in cell["stderr"].splitlines() if NOT_USED in line]
        assert len(said) == 1 and f"belongs to {second.user.name}" in said[0], cell
    assert list(desk.server_folder.iterdir()) == [] and desk.kit_processes() == []
    # the control: the same user, a shared folder with no squat
    clean = Path(tempfile.mkdtemp(prefix="agx-", dir="/tmp"))
    os.chmod(clean, 0o1777)
    control = Desk(desk.user, clean)
    try:
        done = control.check()
        assert done.returncode == 0 and NOT_USED not in done.stderr, done.stderr
        servers = _waited(control.kit_processes, seconds=60)
        assert len(servers) == 1
        (cell,) = control.notebook_checks("%grade check")
        assert PASSED_IN_A_NOTEBOOK in cell["text"] and NOT_USED not in cell["stderr"], cell
        assert control.kit_processes() == servers
    finally:
        left = control.kit_processes()
        shutil.rmtree(clean, ignore_errors=True)
        control.close()
        _waited(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in left), seconds=30)
