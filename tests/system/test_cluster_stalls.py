"""A Dask worker whose grading thread is stuck: the client restarts it, and the class is graded whole.

The worker's event loop still answers the scheduler, so Dask alone waits for ever (the control). The stuck
thread is made by a real ``dask worker --preload`` module: the first submission any worker takes waits on
an event that is never set, as a thread waiting on a lock no one will release.

Its cost: about 85 s and 45 s on a loaded 2-core machine, mostly waiting: the restart comes after the stall budget
(60 s, above what one submission takes to grade on a loaded machine, so no fair grading is restarted), and the
control watches the stuck one for 30 s after the others are graded. Waiting costs no CPU: the other xdist worker
runs meanwhile.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.support import course_certificates
from .conftest import ROOT, run_grade
from .test_cluster import SAMPLES, TOP, CliCluster, progress_lines, results

pytest.importorskip("distributed", reason="the [cluster] extra (pip install -e '.[cluster]')")

STUCK_ONCE = textwrap.dedent('''
    """dask worker --preload: the first submission graded anywhere (the marker file's creator) never ends."""
    import os
    import threading

    from autograder.grading.suites import graded

    _grade_submission = getattr(graded.grade_submission, "__wrapped__", graded.grade_submission)  # Dask may import this twice


    def _grade_submission_or_hang(*args, **kwargs):
        try:
            fd = os.open(os.environ["STALL_MARKER"], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return _grade_submission(*args, **kwargs)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        threading.Event().wait()


    _grade_submission_or_hang.__wrapped__ = _grade_submission
    graded.grade_submission = _grade_submission_or_hang
''')  # noqa: E501 - a line of the preload script, whose text this string is: wrapping it would change the script


def _class(tmp_path):
    subs = tmp_path / "subs"
    for name in ("alice", "bob", "carol"):
        shutil.copytree(SAMPLES / name, subs / name)
    return subs


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> course_certificates.Certificates:
    return course_certificates.make(tmp_path_factory.mktemp("shared") / "attention")


def _cluster(tmp_path, certificates) -> tuple[CliCluster, object]:
    (tmp_path / "stuck_once.py").write_text(STUCK_ONCE)
    marker = tmp_path / "stuck.pid"
    cluster = CliCluster(tmp_path, certificates, workers=2,
                         env={"STALL_MARKER": str(marker), "PYTHONPATH": str(ROOT)},
                         worker_args=("--preload", str(tmp_path / "stuck_once.py")))
    return cluster, marker


def _autograde(subs, out, cluster: CliCluster, stall_seconds: int) -> subprocess.Popen:
    """``grade autograde`` started in the background, to watch while it runs."""
    env = {**os.environ, "DASK_AUTOGRADER__STALL_SECONDS": str(stall_seconds)}
    return subprocess.Popen([sys.executable, "-m", "autograder.cli", "autograde", str(subs), "--out", str(out),
                             *cluster.grade_args()], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def test_a_stuck_worker_is_restarted_and_its_submission_graded_once(tmp_path, certificates):
    cluster, marker = _cluster(tmp_path, certificates)
    try:
        run = run_grade("autograde", str(_class(tmp_path)), "--out", str(tmp_path / "out"), *cluster.grade_args(),
                        env={"DASK_AUTOGRADER__STALL_SECONDS": "60"}, timeout=900)
    finally:
        cluster.close()
    stdout, stderr = run.stdout, run.stderr
    assert run.returncode == 0, stdout[-2000:] + stderr[-4000:]
    assert marker.exists(), "no grading got stuck: the test proves nothing"
    assert "restarting" in stderr and "past every submission's budget" in stderr
    got = results(tmp_path / "out")
    assert sorted(got) == ["alice", "bob", "carol"] and got["alice"]["score"] == TOP
    assert sorted(progress_lines(stdout)) == ["alice", "bob", "carol"]  # each graded once


def test_control_without_the_restart_dask_waits_for_the_stuck_worker_for_ever(tmp_path, certificates):
    cluster, marker = _cluster(tmp_path, certificates)
    run = None
    try:
        run = _autograde(_class(tmp_path), tmp_path / "out", cluster, stall_seconds=100_000)
        deadline = time.monotonic() + 600
        while len(list((tmp_path / "out").glob("*/results.json"))) < 2 and time.monotonic() < deadline:
            assert run.poll() is None, run.communicate()[1][-4000:]
            time.sleep(1)
        time.sleep(30)  # the other two are graded; the stuck one is not, however long we wait
        assert marker.exists() and run.poll() is None
        assert len(list((tmp_path / "out").glob("*/results.json"))) == 2
    finally:
        if run is not None and run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.communicate()
        cluster.close()
