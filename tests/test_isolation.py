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

import pytest

from autograder.sandbox import uids
from autograder.worker import confine as sandbox, seccomp

from .conftest import ROOT, run_grade

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


@pytest.mark.slow
@pytest.mark.parametrize("level", ["uid+rlimits", "rlimits"])
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
    assert all(r["extra_data"]["isolation"] == level and level in r["extra_data"]["isolation_detail"] for r in scores.values())
    # the instructor reads the level (above, and the run's last lines); the student's output and page do not
    assert not any("Isolation" in r["output"] for r in scores.values())
    assert not any("Isolation" in (out / n / "feedback.html").read_text() for n in ("alice", "bob"))


def test_an_unknown_isolation_level_is_refused(tmp_path):
    result = run_grade("autograde", str(SAMPLES / "alice"), "--out", str(tmp_path), env={"AUTOGRADER_ISOLATION": "chroot"})
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


def _in_a_child(install: bool) -> dict:
    """Run a few system calls in a forked child, with or without the workers' seccomp filter."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(read)
            if install:
                seccomp.install()
            libc = ctypes.CDLL(None, use_errno=True)
            found = {"unshare": libc.unshare(0)}
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
