"""Folders the kit keeps state in outside the user's home are its user's own, or refused in one line
(``autograder/worker/owned_dirs.py``): another user's lock folder full of links makes root create nothing, a lock
folder an earlier root run left behind costs a normal user's ``grade autograde`` nothing, and a warm ``grade check``
server's folder another user made first is said in one line while the check runs in-process.

Each test has its control: what the code before these checks did with the same folder (a link followed, a file
created at its target, a FIFO blocked on, a traceback). The tests that need a second user run as root
(``tests/support/local_users.py``); those that touch the machine's fixed paths take the machine to themselves
(``tests/support/machine_lock.py``) and remove what they made there.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from autograder.check import warm_server
from autograder.sandbox import uids
from autograder.worker import locks, owned_dirs, tempdirs

from .conftest import ROOT
from tests.support.local_users import is_root, normal_user, other_user, popen_as, python_for, run_as, site_packages
from tests.support.machine_lock import machine_to_ourselves

SAMPLES = ROOT / "samples" / "submissions"
needs_root = pytest.mark.skipif(not is_root(), reason="a folder of another user's is made by root (useradd, chown)")


@pytest.fixture
def shared():
    """A folder every user may write in, sticky, as ``/tmp`` and ``/run/lock`` are (``tmp_path`` is root's alone, which
    no other user may enter); removed with all that was made in it."""
    folder = Path(tempfile.mkdtemp(prefix="owned-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _as(user, script: str, *args: str) -> None:
    """Run a shell script as ``user`` (its own uid, no groups), which must succeed."""
    done = run_as(user, ["/bin/sh", "-ec", script, "sh", *args], cwd="/", timeout=120)
    assert done.returncode == 0, done.stderr


def _squat(user, folder: Path, targets: Path, count: int = uids.BLOCKS) -> None:
    """As ``user``: make ``folder`` first, holding a link ``N.lock`` to ``targets/nologin-N`` for each uid block."""
    _as(user, 'mkdir -m 755 "$1"; i=0; while [ $i -lt "$3" ]; do ln -s "$2/nologin-$i" "$1/$i.lock"; i=$((i+1)); done',
        str(folder), str(targets), str(count))


def _targets(shared: Path) -> Path:
    """Where the links point: a folder of root's, empty, in which root (only) could create the files named."""
    targets = shared / "targets"
    targets.mkdir(mode=0o755)
    return targets


# -- owned_dirs, piece by piece ------------------------------------------------------------------------
@pytest.mark.unit
@needs_root
def test_a_folder_is_used_only_when_it_is_ours_not_a_link_and_closed_to_others(shared):
    """``open_dir`` refuses a link (even one to a folder of ours), a folder another user made, and one others may
    enter or write in, each with one line that names it; the control: a folder of ours, mode 0700, is opened."""
    own = shared / "own"
    fd = owned_dirs.open_dir(own)  # the control: made, 0700, ours
    try:
        assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o700 and os.fstat(fd).st_uid == 0
    finally:
        os.close(fd)
    (shared / "link").symlink_to(own)
    theirs = shared / "theirs"
    _as(other_user(), 'mkdir -m 700 "$1"', str(theirs))
    refusals = {}
    for name in ("link", "theirs"):
        with pytest.raises(owned_dirs.Refused) as refused:
            owned_dirs.open_dir(shared / name)
        refusals[name] = str(refused.value)
    assert "symbolic link" in refusals["link"] and "belongs to attn-other" in refusals["theirs"]
    os.chmod(own, 0o755)
    with pytest.raises(owned_dirs.Refused, match="may enter it"):
        owned_dirs.open_dir(own)
    os.close(owned_dirs.open_dir(own, private=False))  # one others may read, not write: enough for a socket's
    os.chmod(own, 0o777)
    with pytest.raises(owned_dirs.Refused, match="may write in it"):
        owned_dirs.open_dir(own, private=False)
    assert all("\n" not in line for line in refusals.values())


@pytest.mark.unit
def test_a_file_inside_is_never_opened_through_a_link_nor_blocked_on_by_a_fifo(tmp_path):
    """``open_file`` with ``O_CREAT`` refuses a link and creates nothing at its target, and a FIFO in a file's place
    is refused at once. The control: the plain ``os.open(..., O_RDWR | O_CREAT)`` the lock folder used to do creates
    the file the link names."""
    folder = tmp_path / "locks"
    folder.mkdir(mode=0o700)
    target = tmp_path / "nologin"
    (folder / "1.lock").symlink_to(target)
    os.mkfifo(folder / "2.lock")
    fd = owned_dirs.open_dir(folder)
    try:
        with pytest.raises(owned_dirs.Refused, match="symbolic link"):
            owned_dirs.open_file(fd, "1.lock", os.O_RDWR | os.O_CREAT)
        assert not target.exists()
        with pytest.raises(owned_dirs.Refused, match="not a regular file"):
            owned_dirs.open_file(fd, "2.lock", os.O_RDONLY)
        os.close(owned_dirs.open_file(fd, "3.lock", os.O_RDWR | os.O_CREAT))  # a file of ours: opened
    finally:
        os.close(fd)
    os.close(os.open(folder / "1.lock", os.O_RDWR | os.O_CREAT, 0o600))  # the control: the old open
    assert target.exists()


# -- the uid blocks' lock folder ------------------------------------------------------------------------
@pytest.mark.unit
@needs_root
def test_a_lock_folder_another_user_made_first_with_a_link_per_block_makes_root_create_nothing(shared, monkeypatch,
                                                                                               capsys):
    """Another user makes the lock folder first, with a link ``N.lock`` for each of the 1000 blocks. Root's claim
    says so in one line and claims a block from a folder of its own; no file appears where a link points; the
    squatter's folder tells ``block_held`` nothing. With no folder of its own left, the claim is refused in one line.
    The control: the lock folder's old open, as root, creates the file the link names."""
    squatted, targets = shared / "attention-autograder-uids", _targets(shared)
    _squat(other_user(), squatted, targets)
    own = shared / "own-uids"
    monkeypatch.setattr(locks, "LOCK_DIRS", [squatted, own])
    monkeypatch.setattr(uids, "LOCKS", locks.LOCK_DIRS)
    monkeypatch.setattr(uids, "_said", set())
    base, fd = uids.claim()
    try:
        assert base >= uids.FIRST_UID and locks.block_held(base)
        assert os.listdir(targets) == []
        info = os.stat(own)
        assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o700
        assert (own / f"{(base - uids.FIRST_UID) // uids.BLOCK}.lock").is_file()
        said = capsys.readouterr().err.splitlines()
        assert len(said) == 1 and str(squatted) in said[0] and "belongs to attn-other" in said[0], said
    finally:
        uids.let_go(fd)
    monkeypatch.setattr(locks, "LOCK_DIRS", [squatted])
    assert not locks.block_held(base)  # the squatter's folder says nothing, and nothing in it is opened
    with pytest.raises(owned_dirs.Refused) as refused:
        uids.claim()
    assert "\n" not in str(refused.value) and "belongs to attn-other" in str(refused.value)
    assert os.listdir(targets) == []
    os.close(os.open(squatted / "5.lock", os.O_RDWR | os.O_CREAT, 0o600))  # the control: the old claim's open
    assert os.listdir(targets) == ["nologin-5"]


@pytest.mark.unit
@needs_root
def test_the_lock_folder_at_its_machine_path_squatted_costs_root_nothing(shared):
    """The real paths: another user makes ``/run/lock/attention-autograder-uids`` first, full of links; root's claim
    takes its block in ``/run/attention-autograder-uids`` (only root may make a folder in ``/run``), creates nothing
    at the links' targets, and says nothing (the shared folder is never looked at)."""
    with machine_to_ourselves():
        legacy = Path("/run/lock/attention-autograder-uids")
        if not legacy.parent.is_dir():
            pytest.skip("no /run/lock here")
        if os.path.lexists(legacy):
            pytest.skip(f"{legacy} is there already (a grader's): not ours to replace")
        targets = _targets(shared)
        try:
            _squat(other_user(), legacy, targets)
            base, fd = uids.claim()
            try:
                assert os.listdir(targets) == []
                folder = locks.LOCK_DIRS[0]
                info = os.stat(folder)
                assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o700
                assert (folder / f"{(base - uids.FIRST_UID) // uids.BLOCK}.lock").is_file()
                assert not (os.stat("/run").st_mode & 0o022)  # nobody but root can make it first
            finally:
                uids.let_go(fd)
        finally:
            shutil.rmtree(legacy, ignore_errors=True)


@pytest.mark.unit
def test_a_normal_user_claims_no_uid_block_and_touches_no_lock_folder(monkeypatch):
    """Only root's workers change uid: any other user gets uid base 0 and no lock, whatever is in the lock folders
    (here: none that could be made at all). The control: root claims a block."""
    monkeypatch.setattr(locks, "LOCK_DIRS", [Path("/nonexistent/attention-autograder-uids")])
    monkeypatch.setattr(uids, "needed", lambda: False)
    assert uids.claim() == (0, uids.NO_LOCK)
    uids.let_go(uids.NO_LOCK)  # nothing to close
    monkeypatch.setattr(uids, "needed", lambda: True)
    if not is_root():
        return
    with pytest.raises(owned_dirs.Refused, match="no folder for uid block locks"):  # the control: root needs a block
        uids.claim()


@needs_root
def test_a_lock_folder_left_by_root_costs_a_normal_users_autograde_nothing():
    """Lock folders an earlier root run left (root's, 0700) in both shared places; a normal user's
    ``grade autograde`` of a sample submission (``--trust-submissions``: at rlimits, where a normal user may be,
    untrusted code is refused) exits 0 with its results and no traceback. The control: the lock folder's old search,
    run as that user, raises the ``OSError`` that ended such a run in a traceback."""
    student = normal_user()
    python = python_for(student)
    made = []
    with machine_to_ourselves():
        try:
            for folder in (Path("/run/lock/attention-autograder-uids"), Path("/tmp/attention-autograder-uids")):
                if not folder.parent.is_dir():
                    pytest.skip(f"no {folder.parent} here")
                if not os.path.lexists(folder):
                    folder.mkdir(mode=0o700)
                    made.append(folder)
                if folder.stat().st_uid in (student.uid, other_user().uid):  # an earlier run's, as these users
                    shutil.rmtree(folder)
                    folder.mkdir(mode=0o700)
                    made.append(folder)
                if folder.stat().st_uid != 0:  # a real user's grader made it first: not ours to replace
                    pytest.skip(f"{folder} is uid {folder.stat().st_uid}'s already: not ours to replace")
            old = ("import os\nfrom pathlib import Path\n"
                   "for folder in [Path('/run/lock/attention-autograder-uids'), "
                   "Path('/tmp/attention-autograder-uids')]:\n"
                   "    try:\n"
                   "        folder.mkdir(mode=0o700, parents=True, exist_ok=True)\n"
                   "        if os.access(folder, os.W_OK):\n"
                   "            raise SystemExit('usable: ' + str(folder))\n"
                   "    except OSError:\n"
                   "        continue\n"
                   "raise OSError('no folder for uid block locks')\n")
            control = run_as(student, [python, "-c", old], cwd="/", timeout=60)
            assert control.returncode == 1 and "OSError: no folder for uid block locks" in control.stderr, control

            work = Path(tempfile.mkdtemp(prefix="owned-autograde-", dir="/tmp"))
            try:
                shutil.copytree(SAMPLES / "alice", work / "subs" / "alice")
                shutil.chown(work, student.uid, student.gid)
                for path in work.rglob("*"):
                    os.chown(path, student.uid, student.gid)
                started = time.monotonic()
                done = run_as(student, [python, "-m", "autograder.cli", "autograde", str(work / "subs"), "--out",
                                        str(work / "out"), "--jobs", "1", "--trust-submissions"], cwd=ROOT,
                              env={"PYTHONPATH": f"{ROOT}:{site_packages()}", "GRADE_CACHE_DIR": str(work / "cache"),
                                   "PYTHONDONTWRITEBYTECODE": "1"}, timeout=600)
                assert done.returncode == 0, done.stderr
                assert "Traceback" not in done.stderr and (work / "out" / "alice" / "results.json").is_file()
                assert time.monotonic() - started < 300
            finally:
                shutil.rmtree(work, ignore_errors=True)
        finally:
            for folder in made:
                shutil.rmtree(folder, ignore_errors=True)


# -- lock files elsewhere: temporary folders, held() -----------------------------------------------------
def _opens_at_once(path: Path) -> bool:
    """Whether ``os.open(path, O_RDONLY | O_NOFOLLOW)`` (``locks.held``'s old open) returns within a second; a FIFO's
    blocks until a writer comes, so one is brought after the second, which lets it end."""
    opened = threading.Event()

    def open_it():
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_RDONLY | os.O_NOFOLLOW))
        opened.set()

    thread = threading.Thread(target=open_it, daemon=True)
    thread.start()
    at_once = opened.wait(1.0)
    if not at_once:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # the writer it waits for
    thread.join(5)
    return at_once


@pytest.mark.unit
@needs_root
def test_a_temporary_folder_of_another_user_with_a_fifo_for_a_lock_is_not_waited_on_nor_swept(shared):
    """Another user's folder named as the grader's temporary folders are, its lock file a FIFO: a sweep neither waits
    on it (the old ``held`` would, for ever) nor removes it, and ``held`` on such a FIFO answers at once (held: left
    alone). The control: the old open of that lock file blocks."""
    theirs = shared / "probe-999999-abc"
    _as(other_user(), 'mkdir -m 755 "$1" && mkfifo -m 644 "$1/.owner.lock"', str(theirs))
    alarm = signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.alarm(20)  # a sweep that waits fails the test instead of hanging it
    try:
        tempdirs.sweep("probe-", base=str(shared))
        assert locks.held(theirs / tempdirs.LOCK) is True
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, alarm)
    assert theirs.is_dir()
    assert not _opens_at_once(theirs / tempdirs.LOCK)  # the control


# -- the warm grade check server's folder -------------------------------------------------------------------
@pytest.mark.unit
@needs_root
def test_a_warm_server_folder_another_user_made_first_is_said_in_one_line(shared, monkeypatch, capsys):
    """``attention-grade-<uid>`` made first by another user in the temporary folder: the check is told so in one line
    and runs in-process (``run_served`` answers None, no socket is looked for). The control: in a folder of its own,
    nothing is said."""
    monkeypatch.delenv(warm_server.DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    monkeypatch.setattr(warm_server, "key", lambda: "k")
    assert warm_server.run_served({}) is None  # the control: a folder of ours, and no server in it
    assert capsys.readouterr().err == ""
    shutil.rmtree(shared / f"attention-grade-{os.getuid()}")
    _as(other_user(), 'mkdir -m 700 "$1"', str(shared / f"attention-grade-{os.getuid()}"))
    assert warm_server.socket_path() is None
    assert warm_server.run_served({}) is None
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("note: no warm grade check server: ") and "attn-other" in said[0], said


@pytest.mark.unit
@needs_root
def test_the_client_hands_its_terminal_to_no_server_of_another_user(shared, monkeypatch):
    """A socket served by another user where the server's socket would be (its folder's check bypassed here): the
    client connects, sees the peer is not itself (``SO_PEERCRED``), and sends nothing. The control: the same server
    answered by a client of its own user hears a request."""
    other = other_user()
    folder = shared / "theirs"
    _as(other, 'mkdir -m 755 "$1"', str(folder))
    server = ("import socket, sys\n"
              "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)\n"
              "import os; os.chmod(sys.argv[1], 0o777); print('ready', flush=True)\n"
              "c, _ = s.accept(); c.settimeout(5)\n"
              "try:\n    data = c.recv(8)\nexcept OSError:\n    data = b''\n"
              "print('heard' if data else 'nothing', flush=True)\n")
    sock_path = folder / "k.sock"
    monkeypatch.setattr(warm_server, "_folder", lambda: (folder, None))
    monkeypatch.setattr(warm_server, "key", lambda: "k")
    for client_is_them in (False, True):
        listener = popen_as(other, [python_for(other), "-c", server, str(sock_path)], cwd="/", stdout=subprocess.PIPE,
                            text=True)
        try:
            assert listener.stdout.readline().strip() == "ready"
            if client_is_them:  # the control: a client of the server's own user is heard
                done = run_as(other, [python_for(other), "-c", "import socket, sys\n"
                                      "c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); c.sendall(b'x')",
                                      str(sock_path)], cwd="/", timeout=60)
                assert done.returncode == 0, done.stderr
            else:
                assert warm_server.run_served({}) is None
            assert listener.stdout.readline().strip() == ("heard" if client_is_them else "nothing")
        finally:
            listener.kill()
            listener.wait()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(sock_path)


@needs_root
def test_a_students_check_with_their_warm_server_folder_squatted_still_checks_and_says_so(shared):
    """As a normal user whose ``attention-grade-<uid>`` another user made first in the temporary folder:
    ``grade check`` of a sample submission exits as a check without a server does, with one line on standard error
    that says why there is no warm server. The control: with a temporary folder of its own, the same check leaves a
    warm server's socket behind (ended here by removing its folder)."""
    student, other = normal_user(), other_user()
    python = python_for(student)
    work = Path(tempfile.mkdtemp(prefix="owned-check-", dir="/tmp"))
    try:
        shutil.copytree(SAMPLES / "alice", work / "alice")
        for path in [work, *work.rglob("*")]:
            os.chown(path, student.uid, student.gid)
        env = {"PYTHONPATH": f"{ROOT}:{site_packages()}", "GRADE_CACHE_DIR": str(work / "cache"),
               "PYTHONDONTWRITEBYTECODE": "1", "GRADE_CHECK_SERVER": "1", "GRADE_CHECK_SERVER_IDLE": "30"}
        argv = [python, "-m", "autograder.cli", "check", str(work / "alice")]
        cold = run_as(student, argv, cwd=ROOT, env={**env, "GRADE_CHECK_SERVER": "0"}, timeout=600)
        squatted = shared / f"attention-grade-{student.uid}"
        _as(other, 'mkdir -m 700 "$1"', str(squatted))
        started = time.monotonic()
        done = run_as(student, argv, cwd=ROOT, env={**env, "TMPDIR": str(shared)}, timeout=600)
        assert done.returncode == cold.returncode and done.stdout == cold.stdout, done.stderr
        said = [line for line in done.stderr.splitlines() if "warm grade check server" in line]
        assert len(said) == 1 and str(squatted) in said[0] and "attn-other" in said[0], done.stderr
        assert "Traceback" not in done.stderr and os.listdir(squatted) == []
        assert time.monotonic() - started < 300

        own_tmp = work / "tmp"  # the control: a temporary folder of the student's own
        own_tmp.mkdir()
        os.chown(own_tmp, student.uid, student.gid)
        done = run_as(student, argv, cwd=ROOT, env={**env, "TMPDIR": str(own_tmp)}, timeout=600)
        assert done.returncode == cold.returncode and "warm grade check server" not in done.stderr, done.stderr
        served = own_tmp / f"attention-grade-{student.uid}"
        assert any(name.endswith(".sock") for name in os.listdir(served))
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the warm server sees its socket gone, and ends
        _ended(work)


def _ended(folder: Path, seconds: float = 60) -> None:
    """Wait until no process has ``folder`` in its command line or environment (the warm server and its checks)."""
    marker = str(folder).encode()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                with contextlib.suppress(OSError):
                    if marker in Path(f"/proc/{entry}/environ").read_bytes():
                        alive.append(entry)
        if not alive:
            return
        time.sleep(0.2)
