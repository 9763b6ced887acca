"""What a run shares with the machine and with other runs: world-writable folders, uids, temp folders.

Under ``uid+rlimits`` a worker writes into the machine's own world-writable folders; nothing it writes
may outlive its step, at any depth, and a uid that still owns a file or a process serves no one.
Two graders on one machine never remove each other's folders or control groups.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.worker import confine, leftovers
from autograder.worker.isolation import Level

from .conftest import ROOT, run_grade
from tests.support.levels import for_this_user
from tests.support.machine_lock import machine_to_ourselves

SAMPLES = ROOT / "samples" / "submissions"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="uid changes need root")
DEEP = ["/run/lock/agx-stash/x/y/note", "/var/tmp/agx-stash/a/b/note", "/tmp/agx-stash/deep/er/note"]

WRITER = f'''
import os as _os
for _path in {DEEP!r}:
    try:
        _os.makedirs(_os.path.dirname(_path), exist_ok=True)
        with open(_path, "w") as _fh:
            _fh.write("marshalled stand-in code would go here")
    except OSError:
        pass
'''
READER = f'''
import os as _os
if any(_os.path.exists(_p) for _p in {DEEP!r}):
    raise ImportError("found a note left by an earlier submission")
'''


def _as_uid(uid: int, code) -> int:
    """Run ``code()`` in a child that has become ``uid``; its exit code."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.umask(0o077)
            code()
            os._exit(0)
        except BaseException:  # noqa: BLE001 - a forked check: any failure is its answer
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])



@pytest.fixture(autouse=True)
def _fixed_paths_and_uids_to_ourselves():
    """Fixed uids and folders: another test suite on this machine takes its turn (tests/support/machine_lock.py)."""
    with machine_to_ourselves():
        yield


def _write_deep(path: str):
    def write():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_text("note")
    return write


def _top(path: str) -> str:
    """The folder a note's writer made in the world-writable one (``.../agx-stash``): never more."""
    assert "/agx-" in path
    return path[:path.index("/agx-")] + "/" + path[path.index("/agx-") + 1:].split("/", 1)[0]


def _clean():
    for path in DEEP:
        shutil.rmtree(_top(path), ignore_errors=True)


@ROOT_ONLY
def test_discovery_finds_the_world_writable_folders_every_uid_can_reach():
    found = leftovers.discover()
    for folder in ("/tmp", "/var/tmp", "/run/lock"):
        if os.path.isdir(folder) and os.stat(folder).st_mode & 0o002:
            assert folder in found, found
    assert not [f for f in found if f.startswith(("/proc", "/sys"))]


@ROOT_ONLY
@pytest.mark.parametrize("path", DEEP)
def test_a_file_written_deep_in_a_world_writable_folder_is_found_and_swept(path):
    uid = 2_000_321  # above every block a grader claims (uids.FIRST_UID + uids.BLOCKS * uids.BLOCK)
    roots = leftovers.discover()
    top = _top(path)
    try:
        assert _as_uid(uid, _write_deep(path)) == 0
        assert os.path.exists(path)
        # control: the sweep of old, the top level of /tmp, /var/tmp and /dev/shm only, misses what is
        # under /run/lock, and nothing below the top level tells it whose the note is
        old = [e.path for d in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(d) for e in os.scandir(d)
               if e.stat(follow_symlinks=False).st_uid == uid]
        if path.startswith("/run/lock"):
            assert old == []
        assert top in leftovers.owned_files(uid, roots)
        assert uid in leftovers.owners(uid - 21, 100, roots)
        leftovers.sweep(uid, roots)
        assert not os.path.exists(path) and not os.path.exists(top)
        assert leftovers.owners(uid - 21, 100, roots) == {}
    finally:
        shutil.rmtree(top, ignore_errors=True)


@ROOT_ONLY
def test_a_uid_that_owns_a_process_or_a_file_is_cleaned_or_never_handed_out():
    """The host's check before a block's uids serve a submission: a process left by a killed run is
    killed, its files removed; what cannot be removed keeps the uid out of use."""
    base = 2_000_400  # above every block a grader claims
    plan = confine.Plan(Level.UID, shared=leftovers.discover())
    sleeper = os.fork()
    if sleeper == 0:  # pragma: no cover - child
        os.setresuid(base + 1, base + 1, base + 1)
        time.sleep(60)
        os._exit(0)
    path = "/var/tmp/agx-left/deep/note"
    try:
        assert _as_uid(base + 2, _write_deep(path)) == 0
        deadline = time.monotonic() + 5
        while base + 1 not in leftovers.owners(base, 10, plan.shared) and time.monotonic() < deadline:
            time.sleep(0.01)
        before = leftovers.owners(base, 10, plan.shared)
        assert set(before) == {base + 1, base + 2}, before
        assert confine.dirty_uids(plan, base, 10) == {}
        assert not os.path.exists(path)
        assert os.waitpid(sleeper, 0)[0] == sleeper  # killed
        sleeper = 0
    finally:
        if sleeper:
            os.kill(sleeper, 9)
            os.waitpid(sleeper, 0)
        shutil.rmtree(_top(path), ignore_errors=True)


@ROOT_ONLY
def test_a_note_left_deep_in_a_shared_folder_reaches_no_later_submission(tmp_path):
    """uid+rlimits, one job, so the reader's workers get the writer's very uids: the writer leaves notes deep
    in /run/lock, /var/tmp and /tmp; the reader's simple_attention.py would not import if it found one.
    Both score as alice; the control (a note left there by hand) does cost the reader its points."""
    _clean()
    subs = tmp_path / "subs"
    for name, trick in (("0_writer", WRITER), ("1_reader", READER)):
        shutil.copytree(SAMPLES / "alice", subs / name)
        module = subs / name / "simple_attention.py"
        module.write_text(module.read_text() + trick)
    out = tmp_path / "out"
    try:
        result = run_grade("autograde", str(subs), "--out", str(out), "--jobs", "1", "--trust-submissions",
                           env={"AUTOGRADER_ISOLATION": "uid+rlimits"})
        assert result.returncode == 0, result.stderr[-2000:]
        if "uid+rlimits" not in result.stdout:
            pytest.skip(result.stdout.strip().splitlines()[-1])
        assert "world-writable folders" in result.stdout and "/run/lock" in result.stdout
        scores = {p.parent.name: json.loads(p.read_text())["score"] for p in out.glob("*/results.json")}
        assert scores == {"0_writer": 81, "1_reader": 81}
        assert [p for p in DEEP if os.path.exists(p)] == []  # gone after the run
        # control: the reader does fail when a note is there (left here by root, readable by all)
        _write_deep(DEEP[0])()
        os.chmod(DEEP[0], 0o644)
        for parent in Path(DEEP[0]).parents:
            if str(parent) in ("/run/lock", "/"):
                break
            os.chmod(parent, 0o755)
        again = run_grade("autograde", str(subs / "1_reader"), "--out", str(tmp_path / "control"),
                          "--trust-submissions", env={"AUTOGRADER_ISOLATION": "uid+rlimits"})
        control = json.loads((tmp_path / "control" / "1_reader" / "results.json").read_text())
        assert control["score"] < 81, again.stdout  # its simple_attention.py does not import
    finally:
        _clean()


def _unshare_pid() -> list[str]:
    """A command prefix that runs a program in a PID namespace of its own, where this machine allows it."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return []

    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, timeout=30)
    return ["unshare", "--pid", "--fork", "--mount-proc"] if probe.returncode == 0 else []


@pytest.mark.parametrize("level", for_this_user("namespaces", "uid+rlimits", "rlimits"))
def test_two_batches_and_a_check_side_by_side_grade_right(tmp_path, level):
    """Two ``grade autograde`` batches and a ``grade check`` at once, on one machine, sharing /tmp, the uid
    blocks and the control groups. The second batch starts once the first has staged its submissions,
    in a PID namespace of its own where the machine allows it: there, the first batch's pids mean nothing
    (a sweep that trusted them removed the first batch's staged files: alice 0/81, "missing")."""
    subs = tmp_path / "subs"
    for name in ("alice", "bob"):
        shutil.copytree(SAMPLES / name, subs / name)
    # a temp folder of their own: graders of older versions on this machine (which trust pids) stay out of it
    base = Path(tempfile.mkdtemp(prefix="agx-side-by-side-", dir="/tmp"))
    base.chmod(0o711)  # traversable by the workers' uids, as /tmp is
    env = {**os.environ, "AUTOGRADER_ISOLATION": level, "TMPDIR": str(base)}
    grade = [sys.executable, "-m", "autograder.cli"]

    def batch(out: Path, jobs: str, prefix=()):
        return subprocess.Popen([*prefix, *grade, "autograde", str(subs), "--out", str(out), "--jobs", jobs,
                                 "--trust-submissions"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    first = batch(tmp_path / "out1", "1")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and first.poll() is None and not list(base.glob(
            f"grade-staging-{first.pid}-*/bob")):
        time.sleep(0.02)
    second = batch(tmp_path / "out2", "2", _unshare_pid())
    runs = {"first": first, "second": second}
    try:
        # while both batches run: forked from the warm server (torch imported once), a process of its own all the same
        check = run_grade("check", str(SAMPLES / "alice"), "--json",
                          env={"AUTOGRADER_ISOLATION": level, "TMPDIR": str(base)})
        outputs = {name: proc.communicate(timeout=900) for name, proc in runs.items()}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for name in ("first", "second"):
        assert runs[name].returncode == 0, outputs[name][1][-3000:]
        assert f"isolation: {level}" in outputs[name][0], outputs[name][0]
        out = tmp_path / ("out1" if name == "first" else "out2")
        results = {n: json.loads((out / n / "results.json").read_text()) for n in ("alice", "bob")}
        scores = {n: r["score"] for n, r in results.items()}
        assert scores == {"alice": 81, "bob": 78}, (name, scores, results["alice"]["tests"][0]["output"][:500])
    assert check.returncode == 0, (check.stdout, check.stderr)
    data = json.loads(check.stdout)
    assert data["score"] == data["max_score"] > 0
