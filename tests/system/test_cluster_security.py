"""A Dask cluster obeys only the grader's owner: another local user is refused, and nothing of the grader outlives
a run.

- A LocalCluster (``--local-workers``) while it grades: another local user (tests/support/local_users.py) tries every
  port the grader listens on (tests/support/ways_in.py: a Client and ``client.run``, a nanny's or worker's ``run``
  handler, on tcp:// and on tls:// with a certificate of its own, and Dask's web pages): all refused. Its workers run as
  an unprivileged uid. The control: the same attempts on a LocalCluster started as the kit started it before (no
  security) run code as root.
- docs/cluster.md's Slurm set-up (its certificates made by its own commands, its SLURMCluster, one node's
  worker): the same user is refused, and served once given a copy of the course's grader certificate.
- A scheduler that is not tls:// is refused unless ``--insecure-scheduler``; a tls:// one needs the certificate.
- A worker below the required isolation refuses to grade; it says its level in each result it grades.
- After a run (graded, interrupted, or stopped by an error), a client with the course's certificate finds
  nothing of the grader on the workers (``executor.withdraw``); the control: with the warm grader registered,
  the same look finds it.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster

from autograder.autograde.cluster.warm_grader import NAME, WarmGrader
from autograder.course import load_course
from autograder.grading.suites.grader_identity import grader_hash

from tests.support import course_certificates
from tests.support.ways_in import attempt, listening_ports, successes
from .conftest import ROOT, run_grade
from tests.support.documented_slurm import documented_cluster
from tests.support.local_users import other_user
from .test_cluster import ADVERSARIAL, SAMPLES, TOP, CliCluster, autograde, class_folder, results, wait_for

pytest.importorskip("distributed", reason="the [cluster] extra (pip install -e '.[cluster]')")

COURSE = load_course(ROOT / "course.yml")
#: what a warm grader loads from the course: the reference solutions and the hidden suites
COURSE_FOLDERS = [str((ROOT / COURSE.solutions).resolve()), str((ROOT / COURSE.suites).resolve())]


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> course_certificates.Certificates:
    return course_certificates.make(tmp_path_factory.mktemp("shared") / "attention")


# -- what another local user can do ------------------------------------------------------------------
def _status(pid: int) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)


def _dask_workers(client_pid: int) -> list[int]:
    """The client's children forked from it (the same command line): its LocalCluster's Dask workers."""
    own = Path(f"/proc/{client_pid}/cmdline").read_bytes()
    children = [c for task in Path(f"/proc/{client_pid}/task").iterdir()
                for c in (task / "children").read_text().split()]
    found = []
    for pid in map(int, children):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == own:
                found.append(pid)
        except OSError:
            continue
    return found


def _unprivileged(pids: list[int]) -> list[int]:
    """Those of ``pids`` that run as a uid of the grader's blocks (1,000,000 and up)."""
    found = []
    for pid in pids:
        try:
            if int(_status(pid)["Uid"].split()[0]) >= 1_000_000:
                found.append(pid)
        except (OSError, KeyError):
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
        # the two workers once each has dropped root (before it registers with the scheduler): a fork of the client
        # about to exec (a zygote's start) has its command line too, but the client's uid
        workers = wait_for(lambda: grader.poll() is not None or (len(w := _unprivileged(_dask_workers(grader.pid))) == 2
                                                                 and w), 300, "the two Dask workers, as the run's uid")
        assert grader.poll() is None, grader.communicate()
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
        with Client(documented.cluster.scheduler_address, security=certificates.client_security(),
                    timeout=60) as client:
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
        for field, source in (("ca", certificates.ca), ("cert", certificates.grader[0]),
                              ("key", certificates.grader[1])):
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


# -- nothing of the grader is left on the workers ----------------------------------------------------
def what_is_left(folders: list[str]):
    """A function to run on each worker (``client.run``): what a warm grader would have left there. Made here, so
    that it travels by value: a worker cannot import the tests."""
    def look(dask_worker=None) -> dict:
        import gc  # noqa: PLC0415 - on the worker
        import linecache  # noqa: PLC0415 - on the worker
        import os  # noqa: PLC0415 - on the worker
        import sys  # noqa: PLC0415 - on the worker
        from pathlib import Path  # noqa: PLC0415 - on the worker

        def of_the_course(path) -> bool:
            return isinstance(path, str) and any(path == f or path.startswith(f + os.sep) for f in folders)

        gc.unfreeze()  # what was frozen (Grader.warm_cache) is listed too
        tasks = Path(f"/proc/{os.getpid()}/task")
        return {"plugin": "attention-autograder" in dask_worker.plugins,
                "graders": sum(type(o).__name__ in ("Grader", "Reference", "WarmGrader") for o in gc.get_objects()),
                "modules": sorted(n for n, m in list(sys.modules.items())
                                  if of_the_course(getattr(m, "__file__", None)) or n.startswith("_reference_")),
                "lines": sorted(p for p in linecache.cache if of_the_course(p)),
                "children": sorted(c for t in tasks.iterdir() for c in (t / "children").read_text().split())}
    return look


NOTHING = {"plugin": False, "graders": 0, "modules": [], "lines": [], "children": []}


def _left(cluster: CliCluster) -> dict:
    on_workers = cluster.client.run(what_is_left(COURSE_FOLDERS))
    on_scheduler = cluster.client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.worker_plugins))
    return {"workers": on_workers, "scheduler": on_scheduler}


def _nothing_left(cluster: CliCluster) -> bool:
    left = _left(cluster)
    return bool(left["workers"]) and all(v == NOTHING for v in left["workers"].values()) \
        and "attention-autograder" not in left["scheduler"]


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory, certificates):
    cluster = CliCluster(tmp_path_factory.mktemp("dask-tls"), certificates, workers=1)
    yield cluster
    cluster.close()


def test_the_look_finds_a_warm_grader_where_there_is_one(tls_cluster):
    """The control for the tests below: the warm grader registered by hand, the same look finds it."""
    client = tls_cluster.client
    course_file = ROOT / "course.yml"
    client.register_plugin(WarmGrader(str(course_file), grader_hash(course_file, COURSE)))
    try:
        def warm(dask_worker):
            plugin = dask_worker.plugins[NAME]
            plugin._ready.result(timeout=300)
            return plugin.busy_seconds()

        client.run(warm)
        left = _left(tls_cluster)
        for found in left["workers"].values():
            assert found["plugin"] and found["graders"] >= 2 and found["children"], found
            assert any(n.startswith("_reference_") for n in found["modules"]), found
            assert any(n.endswith("test_simple_attention") for n in found["modules"]), found
        assert NAME in left["scheduler"]
    finally:
        client.unregister_worker_plugin(NAME)
    assert wait_for(lambda: _nothing_left(tls_cluster), 60, "the grader to leave the worker")


def test_after_a_run_nothing_of_the_grader_is_left_on_the_workers(tls_cluster, tmp_path):
    out = tmp_path / "out"
    graded = run_grade("autograde", str(SAMPLES / "alice"), str(SAMPLES / "dave"), "--out", str(out),
                       *tls_cluster.grade_args(), timeout=600)
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-4000:]
    assert results(out)["alice"]["score"] == TOP
    assert _nothing_left(tls_cluster), _left(tls_cluster)


def test_after_an_interrupted_run_nothing_of_the_grader_is_left_on_the_workers(tls_cluster, tmp_path):
    subs = class_folder(tmp_path / "subs", copies=2)
    out = tmp_path / "out"
    run = subprocess.Popen([sys.executable, "-m", "autograder.cli", "autograde", str(subs), "--out", str(out),
                            *tls_cluster.grade_args()], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for(lambda: len(list(out.glob("*/results.json"))) >= 1, 300, "the first result")
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.communicate()
    assert run.returncode == 130, stdout[-2000:] + stderr[-4000:]
    assert len(list(out.glob("*/results.json"))) < 16  # interrupted mid-batch
    # the worker finishes the submission it had, then drops the grader
    assert wait_for(lambda: _nothing_left(tls_cluster), 120, "the grader to leave the worker"), _left(tls_cluster)


def test_a_worker_below_the_required_isolation_refuses_reports_its_level_and_leaves_nothing(tmp_path, certificates):
    """One node without namespaces (capped to rlimits here): it refuses to go below a level, and the run stopped by
    that error (exit 2) leaves nothing of its grader on the worker; it says its level in each result it grades."""
    cluster = CliCluster(tmp_path, certificates, workers=1, env={"AUTOGRADER_ISOLATION": "rlimits"})
    try:
        out = tmp_path / "out"
        refused = run_grade("autograde", str(SAMPLES / "alice"), "--out", str(out), *cluster.grade_args(),
                            "--require-isolation", "uid+rlimits", timeout=600)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "rlimits, below the required uid+rlimits" in refused.stderr
        assert not list(out.glob("*/results.json"))
        assert wait_for(lambda: _nothing_left(cluster), 60, "the grader to leave the worker"), _left(cluster)

        two = run_grade("autograde", str(SAMPLES / "alice"), str(SAMPLES / "bob"), "--out", str(out),
                        *cluster.grade_args(), timeout=600)
        assert two.returncode == 2 and "--trust-submissions" in two.stderr  # as with --jobs: untrusted, not at rlimits
        assert not list(out.glob("*/results.json"))

        one = autograde(str(SAMPLES / "alice"), "--out", str(out), *cluster.grade_args(), "--trust-submissions")
        result = results(out)["alice"]
        assert result["extra_data"]["isolation"] == "rlimits" and "rlimits" in result["extra_data"]["isolation_detail"]
        assert "Isolation" not in result["output"]  # the sandbox is the instructor's to read, not the student's
        assert result["score"] == TOP
        assert "isolation: rlimits" in one.stdout
    finally:
        cluster.close()
