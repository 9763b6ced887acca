"""Isolation levels: what the grader falls back to, and that every level grades the same."""
from __future__ import annotations

import ctypes
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import threading

import socket
import tempfile
from pathlib import Path

import pytest

from autograder.autograde import reach
from autograder.sandbox import uids
from autograder.worker import confine as sandbox, seccomp

from tests.support import isolation_attacks as attacks
from .conftest import ROOT, run_grade
from tests.support.levels import for_this_user
from tests.support.machine_lock import machine_to_ourselves

SAMPLES = ROOT / "samples" / "submissions"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's workers change uid: no one else claims a block")
def test_two_zygotes_never_share_a_uid_block():
    first, lock1 = uids.claim()
    second, lock2 = uids.claim()
    try:
        assert first != second and abs(first - second) >= uids.BLOCK
    finally:
        os.close(lock1)
        os.close(lock2)


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and uid changes need root")
def test_namespaces_work_when_the_interpreter_lives_under_tmp(tmp_path):
    """A venv under /tmp (a CI checkout there) is allow-listed under the sandbox's own /tmp."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    code = ("import sys; from autograder.worker import confine as sandbox; "
            f"plan = sandbox.plan_for_zygote(1_999_000, [{str(site)!r}]); print(plan.level); print(plan.reason)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    level, reason = (out.stdout.splitlines() + [""])[:2]
    if "unshare" in reason:  # a machine that refuses namespaces altogether: nothing to test here
        pytest.skip(reason)
    assert level == "namespaces", reason


@pytest.mark.parametrize("level", for_this_user("uid+landlock", "uid+rlimits", "rlimits"))
def test_every_level_grades_alike_and_says_which_it_used(tmp_path, level):
    subs = tmp_path / "subs"
    for name in ("alice", "bob"):
        shutil.copytree(SAMPLES / name, subs / name)
    out = tmp_path / "out"
    result = run_grade("autograde", str(subs), "--out", str(out), "--jobs", "1", "--trust-submissions",
                      env={"AUTOGRADER_ISOLATION": level})
    assert result.returncode == 0, result.stderr
    assert f"isolation: {level}" in result.stdout
    scores = {n: json.loads((out / n / "results.json").read_text()) for n in ("alice", "bob")}
    assert scores["alice"]["score"] == 81 and scores["bob"]["score"] == 78
    assert all(r["extra_data"]["isolation"] == level and level in r["extra_data"]["isolation_detail"]
               for r in scores.values())
    # the instructor reads the level (above, and the run's last lines); the student's output and page do not
    assert not any("Isolation" in r["output"] for r in scores.values())
    assert not any("Isolation" in (out / n / "feedback.html").read_text() for n in ("alice", "bob"))


def test_an_unknown_isolation_level_is_refused(tmp_path):
    result = run_grade("autograde", str(SAMPLES / "alice"), "--out", str(tmp_path),
                       env={"AUTOGRADER_ISOLATION": "chroot"})
    assert result.returncode != 0
    assert "AUTOGRADER_ISOLATION='chroot'" in result.stderr


def test_a_reused_worker_gets_each_step_s_cpu_budget_within_the_submission_s():
    """The CPU limit is the step's budget, renewed for each step a worker serves, never above the hard one."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            sandbox._limit(resource.RLIMIT_CPU, 3, 50)
            assert resource.getrlimit(resource.RLIMIT_CPU) == (3, 50)
            sandbox.renew_cpu(20)
            usage = resource.getrusage(resource.RUSAGE_SELF)
            soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
            expected = math.ceil(usage.ru_utime + usage.ru_stime + 20) + 1  # measured just after: never less
            assert hard == 50 and soft in (expected - 1, expected)
            sandbox.renew_cpu(100)
            assert resource.getrlimit(resource.RLIMIT_CPU) == (50, 50)
            os._exit(0)
        except BaseException:  # noqa: BLE001 - a forked check: any failure is its answer
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def _in_a_child(install: bool, **without) -> dict:
    """Run a few system calls in a forked child, with or without the workers' seccomp filter."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(read)
            libc = ctypes.CDLL(None, use_errno=True)
            if install:  # as a worker has it: no_new_privs first, which a user who is not root needs for a filter
                libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
                seccomp.install(**without)
            found = {"unshare": libc.unshare(0)}
            for name, family, kind in (("tcp", socket.AF_INET, socket.SOCK_STREAM),
                                       ("udp", socket.AF_INET, socket.SOCK_DGRAM),
                                       ("netlink", socket.AF_NETLINK, socket.SOCK_RAW),
                                       ("unix_stream", socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC),
                                       ("unix_dgram", socket.AF_UNIX, socket.SOCK_DGRAM)):
                fd = libc.socket(family, kind, 0)
                found[name] = fd >= 0
                if fd >= 0:
                    os.close(fd)
            pair = socket.socketpair()
            pair[0].sendall(b"x")
            found["socketpair"] = pair[1].recv(1) == b"x"
            found["connect"] = libc.connect(pair[0].fileno(), None, 0) != -1 or ctypes.get_errno() != 1
            found["shmget"] = libc.shmget(0, 4096, 0o1600) >= 0  # IPC_PRIVATE, IPC_CREAT | 0600
            if found["shmget"]:
                libc.shmctl(libc.shmget(0, 4096, 0o1600), 0, None)
            found["setsid"] = libc.setsid() != -1 or ctypes.get_errno() != 1
            if install:  # (a raw clone that went through would leave two of us here)
                found["ptrace"] = libc.syscall(101, 0, 0, 0, 0)
                found["clone_newuser"] = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)
            thread = threading.Thread(target=lambda: None)
            thread.start()
            thread.join()
            child = os.fork()
            if child == 0:
                os._exit(7)
            found["fork"] = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
            os.write(write, json.dumps(found).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as fh:
        return json.loads(fh.read() or "{}")


def test_the_seccomp_filter_refuses_what_grading_never_needs():
    if not seccomp.supported():
        pytest.skip("the filter is described for x86_64 only")
    without, with_filter = _in_a_child(False), _in_a_child(True)
    assert without["unshare"] == 0  # the control: unshare(0) is allowed without the filter
    assert with_filter["unshare"] == -1 and with_filter["ptrace"] == -1 and with_filter["clone_newuser"] == -1
    assert with_filter["fork"] == 7  # fork and threads still work


def test_without_a_namespace_the_filter_refuses_what_it_would_have_kept_apart():
    """Without a network namespace: no socket but a Unix stream one, no connect; without an IPC namespace: no System
    V IPC; without a PID namespace or a uid of its own: no new session. The control: the same calls without it."""
    if not seccomp.supported():
        pytest.skip("the filter is described for x86_64 only")
    plain = _in_a_child(True)
    confined = _in_a_child(True, network=True, ipc=True, sessions=True)
    assert plain["tcp"] and plain["udp"] and plain["netlink"] and plain["unix_dgram"] and plain["shmget"]
    assert plain["connect"] and plain["setsid"]
    assert not (confined["tcp"] or confined["udp"] or confined["netlink"] or confined["unix_dgram"])
    assert not (confined["connect"] or confined["shmget"] or confined["setsid"])
    assert confined["unix_stream"] and confined["socketpair"] and confined["fork"] == 7  # what grading uses stays


# -- the instructor's files, out of a worker's reach at every level ---------------------------------------------
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="root's levels: workers of uids of their own")


@pytest.fixture
def course(tmp_path):
    """A copy of the kit and the course in a folder of its own in /tmp, and a class of five beside it: alice, a
    thief of the reference and a reader of alice's staged files, and their honest control (the stubs)."""
    with machine_to_ourselves():
        base = Path(tempfile.mkdtemp(prefix="agx-course-", dir="/tmp"))
        try:
            kit = attacks.kit_copy(base / "kit")
            hand_ins = base / "hand-ins"
            # named for this test alone: a shared machine may be grading another alice meanwhile
            alice = f"alice-{base.name}"
            attacks.correct(hand_ins / alice)
            attacks.reference_thief(hand_ins / "thief", token=base.name)
            attacks.classmate_reader(hand_ins / "reader", alice)
            attacks.stubs(hand_ins / "control")
            yield base, kit, hand_ins
        finally:
            shutil.rmtree(base, ignore_errors=True)


def _grade_as_root(kit: Path, hand_ins: Path, out: Path, level: str, *extra: str):
    done = subprocess.run([sys.executable, "-m", "autograder.cli", "autograde", str(hand_ins), "--out", str(out),
                           "--jobs", "1", *extra], cwd=kit, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "AUTOGRADER_ISOLATION": level, "PYTHONPATH": str(kit)})
    scores = {p.parent.name: json.loads(p.read_text())["score"] for p in out.glob("*/results.json")}
    return done, scores


@ROOT_ONLY
def test_at_uid_rlimits_the_reference_and_the_classmates_are_out_of_reach(course):
    """Root without namespaces or Landlock: a worker's uid could read whatever the machine lets every user read, so
    the run refuses untrusted code while any of the instructor's files is readable, naming each and the fix; made
    unreadable, it grades, and neither attack gains anything over its control. The control that the attacks work:
    the same class, trusted, with the files readable."""
    base, kit, hand_ins = course
    base.chmod(0o755)
    done, scores = _grade_as_root(kit, hand_ins, base / "refused", "uid+rlimits")
    assert done.returncode == 2 and scores == {}, done.stdout + done.stderr
    refusal = done.stderr.strip()
    assert len(refusal.splitlines()) == 1 and "a worker's uid could read" in refusal
    for named in ("the reference solutions", str(kit / "solutions"), "the hidden suites", "course.yml",
                  "the class's hand-ins", "chmod -R go-rwx"):
        assert named in refusal, refusal

    trusted, scores = _grade_as_root(kit, hand_ins, base / "trusted", "uid+rlimits", "--trust-submissions")
    assert trusted.returncode == 0, trusted.stderr
    assert scores["thief"] == 81 and scores["control"] == 0  # the attack works where it can read
    plain, scores = _grade_as_root(kit, hand_ins, base / "plain", "rlimits", "--trust-submissions")
    assert plain.returncode == 0 and scores["reader"] == 81, plain.stderr  # and the reader, where it may enter staging

    base.chmod(0o700)  # the instructor's files (the kit, the course, the hand-ins, the results) theirs alone
    done, scores = _grade_as_root(kit, hand_ins, base / "out", "uid+rlimits")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "isolation: uid+rlimits" in done.stdout
    assert scores == {f"alice-{base.name}": 81, "thief": 0, "reader": 0, "control": 0}


@ROOT_ONLY
def test_at_uid_landlock_the_reference_and_the_classmates_are_out_of_reach_whatever_their_modes(course):
    base, kit, hand_ins = course
    base.chmod(0o755)  # everything readable by every uid: Landlock keeps the workers from it all the same
    done, scores = _grade_as_root(kit, hand_ins, base / "out", "uid+landlock")
    if "isolation: uid+landlock" not in done.stdout:
        pytest.skip(f"no Landlock here: {done.stdout.strip().splitlines()[-2:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert scores == {f"alice-{base.name}": 81, "thief": 0, "reader": 0, "control": 0}


@ROOT_ONLY
@pytest.mark.parametrize("level", ["namespaces", "uid+landlock", "uid+rlimits", "rlimits"])
def test_a_worker_reaches_no_service_on_loopback(tmp_path, level):
    """A loopback service that hands out the reference (as a careless local service would): the thief connects to
    it at import; at every level, with or without a network namespace, it gets nothing and the service sees no
    visit. The control: the test's own connection is served."""
    service = attacks.Service()
    try:
        with socket.create_connection(("127.0.0.1", service.port)) as sock:
            sock.sendall(b"simple_attention\n")
            assert b"def attention_scores" in b"".join(iter(lambda: sock.recv(65536), b""))
        assert service.visits == 1
        attacks.reference_thief(tmp_path / "subs" / "thief", token="no-such-folder", port=service.port)
        attacks.stubs(tmp_path / "subs" / "control")
        done = run_grade("autograde", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--trust-submissions",
                         env={"AUTOGRADER_ISOLATION": level})
        assert done.returncode == 0, done.stderr
        assert f"isolation: {level}" in done.stdout, done.stdout
        scores = {p.parent.name: json.loads(p.read_text())["score"] for p in (tmp_path / "out").glob("*/results.json")}
        assert scores == {"thief": 0, "control": 0} and service.visits == 1
    finally:
        service.close()


@pytest.mark.unit
def test_reach_names_what_another_uid_could_read_and_nothing_else(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("trying another uid needs root")
    base = Path(tempfile.mkdtemp(prefix="agx-reach-", dir="/tmp"))
    try:
        (base / "public").mkdir(mode=0o755)
        (base / "public" / "answers.py").write_text("x = 1\n")
        (base / "public" / "answers.py").chmod(0o644)
        (base / "private").mkdir(mode=0o700)
        (base / "private" / "answers.py").write_text("x = 1\n")
        base.chmod(0o755)
        roots = {base / "public": "the public copy", base / "private": "the private copy"}
        said = reach.unreadable(2_000_777, roots)
        assert "the public copy" in said and "2 of 2 readable" in said and "the private copy" not in said
        assert reach.unreadable(2_000_777, {base / "private": "the private copy"}) is None
        assert "under /usr" in reach.under_allow_list({Path("/usr/local/course"): "the course"}, ["/usr"])
        assert reach.under_allow_list({base: "the course"}, ["/usr"]) is None
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.unit
def test_a_host_refuses_uids_outside_its_zygote_s_block():
    """What asks a zygote for a sandbox may hold less than root (a Dask worker that dropped it): the uids its workers
    run as lie in one block of the kit's own range, never root's (0) nor a user's of the machine."""
    from autograder.worker import confine, host, locks  # noqa: PLC0415 - the worker package, as the zygote loads it
    from autograder.worker.isolation import Level  # noqa: PLC0415 - as above

    plan = confine.Plan(Level.UID, uid_base=locks.FIRST_UID + 5 * locks.BLOCK)
    assert host.within_block(plan, plan.uid_base, locks.BLOCK - 1)  # control: a student's uids of the block
    assert host.within_block(plan, plan.uid_base + locks.BLOCK - 1, 1)  # control: the reference worker's
    assert not host.within_block(plan, 0, 1)  # root
    assert not host.within_block(plan, 1000, 1)  # a user's of the machine
    assert not host.within_block(plan, plan.uid_base, locks.BLOCK + 1)  # past the block's end
    assert not host.within_block(plan, locks.FIRST_UID + locks.BLOCKS * locks.BLOCK, 1)  # past the kit's range
    assert host.within_block(confine.Plan(Level.USERNS), 0, 1000)  # workers keep the zygote's own uid
