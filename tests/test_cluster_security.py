"""A Dask cluster obeys only the grader's owner: another local user is refused, and nothing of the grader outlives a run.

- A LocalCluster (``--local-workers``) while it grades: another local user (tests/local_users.py) tries every port
  the grader listens on (tests/ways_in.py: a Client and ``client.run``, a nanny's or worker's ``run``
  handler, on tcp:// and on tls:// with a certificate of its own, and Dask's web pages): all refused. Its
  workers run as an unprivileged uid. The control: the same attempts on a LocalCluster started as the kit
  started it before (no security) run code as root.
- docs/cluster.md's Slurm set-up (its certificates made by its own commands, its SLURMCluster, one node's
  worker): the same user is refused, and served once given a copy of the course's grader certificate.
- A scheduler that is not tls:// is refused unless ``--insecure-scheduler``; a tls:// one needs the certificate.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster


from . import course_certificates
from .ways_in import attempt, listening_ports, successes
from .conftest import ROOT, run_grade
from .documented_slurm import documented_cluster
from .local_users import other_user
from .test_cluster import ADVERSARIAL, SAMPLES, TOP, CliCluster, results, wait_for

pytest.importorskip("distributed", reason="the [cluster] extra (pip install -e '.[cluster]')")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> course_certificates.Certificates:
    return course_certificates.make(tmp_path_factory.mktemp("shared") / "attention")


# -- what another local user can do ------------------------------------------------------------------
def _status(pid: int) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)


def _dask_workers(client_pid: int) -> list[int]:
    """The client's children forked from it (the same command line): its LocalCluster's Dask workers."""
    own = Path(f"/proc/{client_pid}/cmdline").read_bytes()
    children = [c for task in Path(f"/proc/{client_pid}/task").iterdir() for c in (task / "children").read_text().split()]
    found = []
    for pid in map(int, children):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == own:
                found.append(pid)
        except OSError:
            continue
    return found


def test_another_user_cannot_run_code_in_a_local_clusters_workers_while_it_grades(tmp_path):
    other = other_user()
    subs = tmp_path / "subs"
    sleepers = [f"sleep_forever-{i}" for i in range(4)]  # each holds a worker for its step's time limit
    for name in sleepers:
        shutil.copytree(ADVERSARIAL / "sleep_forever", subs / name)
    shutil.copytree(SAMPLES / "alice", subs / "alice")
    out = tmp_path / "out"
    grader = subprocess.Popen([sys.executable, "-m", "autograder.cli", "autograde", str(subs), "--out", str(out),
                               "--executor", "dask", "--local-workers", "2"], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        workers = wait_for(lambda: grader.poll() is not None or (len(w := _dask_workers(grader.pid)) == 2 and w), 300,
                           "the two Dask workers")
        assert grader.poll() is None, grader.communicate()
        time.sleep(3)  # the workers' warm graders start: the batch is under way
        workers = _dask_workers(grader.pid)  # (a fork about to exec, such as a zygote's start, has gone)
        assert len(workers) == 2 and grader.poll() is None, workers
        statuses = {pid: _status(pid) for pid in workers}
        # the scheduler, its web server, the nannies (in the grader's process), the workers and theirs
        found = attempt(other, listening_ports([grader.pid, *workers]))
        running_after = grader.poll() is None and set(workers) <= set(_dask_workers(grader.pid))
        stdout, stderr = grader.communicate(timeout=600)
    finally:
        if grader.poll() is None:
            os.killpg(grader.pid, signal.SIGKILL)
            grader.communicate()
    assert running_after, ("the batch ended before the attempts did: they prove nothing", found, workers,
                           stdout[-2000:], stderr[-3000:])
    assert successes(found) == {}, found
    # the scheduler's port refused a TLS handshake with a certificate the cluster's CA did not sign
    refusals = " ".join(what["refused"] for ways in found.values() for what in ways.values())
    assert "SSL" in refusals or "certificate" in refusals or "TLS" in refusals, found
    # the Dask workers ran as one unprivileged uid, with no groups, no capabilities, no way back to root
    for pid, status in statuses.items():
        uids, gids = status["Uid"].split(), status["Gid"].split()
        assert len(set(uids)) == 1 and int(uids[0]) >= 1_000_000, (pid, status["Uid"])
        assert len(set(gids)) == 1 and int(gids[0]) >= 1_000_000, (pid, status["Gid"])
        assert status["Groups"].strip() == "" and int(status["CapEff"], 16) == 0 and status["NoNewPrivs"] == "1", status
    # and the batch graded as usual
    assert grader.returncode == 0, stdout[-2000:] + stderr[-4000:]
    got = results(out)
    assert got["alice"]["score"] == TOP
    assert all(0 < got[name]["score"] < TOP for name in sleepers)


def test_control_another_user_runs_code_as_root_in_a_local_cluster_without_security():
    """The LocalCluster as the kit started it before (no security, on loopback): the same attempts run as root."""
    other = other_user()
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}), \
            LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                         host="127.0.0.1") as cluster, Client(cluster) as client:
        pids = [os.getpid(), *client.run(os.getpid).values()]
        found = attempt(other, listening_ports(pids))
        scheduler_port = cluster.scheduler_address.rsplit(":", 1)[1]
    got = successes(found)
    assert list(got[scheduler_port]["client"].values()) == [0], found  # client.run: code run as root
    assert any("run" in ways for ways in got.values()), found  # a nanny's or worker's own run handler too


def test_the_documented_cluster_refuses_a_client_without_the_course_certificate(tmp_path):
    """docs/cluster.md's Slurm set-up: another user without the course's certificate is refused everywhere; the
    same user with a copy of the grader's certificate is served (the refusal is the certificate's, not the user's)."""
    other = other_user()
    with documented_cluster(tmp_path) as documented:
        certificates = documented.certificates
        with Client(documented.cluster.scheduler_address, security=certificates.client_security(), timeout=60) as client:
            client.wait_for_workers(1, timeout=120)
            worker_pids = list(client.run(os.getpid).values())
        # the scheduler (in this process, as on the login node), the node's nanny and worker
        nanny = {int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) for pid in worker_pids}
        found = attempt(other, listening_ports([os.getpid(), *nanny, *worker_pids]))
        assert successes(found) == {}, found
        # the certificate files are the instructor's alone
        for path in (certificates.ca, *certificates.cluster, *certificates.grader):
            assert os.stat(path).st_mode & 0o077 == 0, path
        # the control: the same user, given the grader's certificate, is served
        mine = other.home / "course-certificate"
        shutil.rmtree(mine, ignore_errors=True)
        mine.mkdir(mode=0o700)
        copies = {}
        for field, source in (("ca", certificates.ca), ("cert", certificates.grader[0]), ("key", certificates.grader[1])):
            copies[field] = str(mine / source.name)
            shutil.copy(source, copies[field])
        for path in [mine, *mine.iterdir()]:
            os.chown(path, other.uid, other.gid)
        try:
            port = documented.cluster.scheduler_address.rsplit(":", 1)[1]
            served = attempt(other, [int(port)], course=copies)
        finally:
            shutil.rmtree(mine, ignore_errors=True)
    assert "ok" in served[port]["client-course"], served
    assert sorted(successes(served)[port]) == ["client-course"], served


# -- tcp:// is refused unless told -------------------------------------------------------------------
def test_a_scheduler_without_tls_is_refused_unless_insecure_scheduler(tmp_path):
    cluster = CliCluster(tmp_path, None, workers=1)  # plain tcp://, as a private network's might be
    try:
        out = tmp_path / "out"
        refused = run_grade("autograde", str(SAMPLES / "alice"), "--out", str(out), "--executor", "dask",
                            "--scheduler", cluster.address, timeout=120)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        said = [line for line in refused.stderr.splitlines() if line.strip()]
        assert len(said) == 1 and "--insecure-scheduler" in said[0] and cluster.address in said[0], refused.stderr
        assert not out.exists() or not list(out.glob("*/results.json"))
        graded = run_grade("autograde", str(SAMPLES / "alice"), "--out", str(out), *cluster.grade_args(), timeout=600)
        assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-4000:]
        assert results(out)["alice"]["score"] == TOP
    finally:
        cluster.close()


def test_a_tls_scheduler_needs_the_course_certificate(tmp_path, certificates):
    address = "tls://127.0.0.1:1"
    missing = run_grade("autograde", str(SAMPLES / "alice"), "--out", str(tmp_path / "out"), "--executor", "dask",
                        "--scheduler", address, timeout=120)
    assert missing.returncode == 2 and "--tls-ca-file, --tls-cert, --tls-key" in missing.stderr, missing.stderr
    loose = tmp_path / "grader.key"
    shutil.copy(certificates.grader[1], loose)
    loose.chmod(0o644)
    args = certificates.grade_args()
    args[args.index("--tls-key") + 1] = str(loose)
    readable = run_grade("autograde", str(SAMPLES / "alice"), "--out", str(tmp_path / "out"), "--executor", "dask",
                         "--scheduler", address, *args, timeout=120)
    assert readable.returncode == 2 and "chmod 600" in readable.stderr, readable.stderr
