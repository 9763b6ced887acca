"""`grade autograde --executor dask` on real Dask clusters on loopback: the same results as ``--jobs``, and faults.

Each cluster is started here: a ``dask scheduler`` and two ``dask worker`` processes through Dask's own CLI (random free
ports, one process and one thread each, over TLS with the course's certificates made as docs/cluster.md says:
tests/support/course_certificates.py), and a ``LocalCluster`` (``--local-workers 2``, secured with a key of the run's
own). Grading goes through the real ``grade`` CLI. The comparisons are against a local ``--jobs 2`` run of the same
submissions: every results.json must be equal apart from the timing field.
"""
from __future__ import annotations

import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from distributed import Client

from autograder.course import load_course

from tests.support import course_certificates, scheduler_file
from .conftest import ROOT, run_grade
from tests.support.documented_slurm import documented_cluster, worker_command
from tests.support.levels import best_here
from tests.support.processes import GONE_WITHIN, alive, note_descendants, still_running

pytest.importorskip("distributed", reason="the [cluster] extra (pip install -e '.[cluster]')")

COURSE = load_course(ROOT / "course.yml")
TOP = COURSE.max_points()
SAMPLES = ROOT / "samples" / "submissions"
CORPUS = ROOT / "tests" / "corpus" / "submissions"
ADVERSARIAL = ROOT / "tests" / "corpus" / "adversarial"
ADV_MANIFEST = json.loads((ADVERSARIAL / "manifest.json").read_text())
DASK = Path(sys.executable).with_name("dask")
#: the sample corpus and a few of the test corpus: correct, buggy in each module, untouched stubs
CLASS = {**{name: SAMPLES / name for name in ("alice", "bob", "carol", "dave")},
         **{name: CORPUS / name for name in ("correct_einsum", "bug_no_scaling", "bug_mha_permute_merge",
                                             "bug_mask_wrong_corner")}}


# -- helpers -------------------------------------------------------------------------------------
def class_folder(folder: Path, copies: int = 1) -> Path:
    """CLASS in ``folder``; with ``copies`` > 1, each also as ``<name>-<i>``."""
    for name, source in CLASS.items():
        for i in range(copies):
            shutil.copytree(source, folder / (name if i == 0 else f"{name}-{i}"))
    return folder


def source_of(name: str) -> str:
    return name.split("-", 1)[0]


def comparable(result: dict) -> dict:
    """A result without what differs between two gradings of the same content: timing, and the name of a copy."""
    result = copy.deepcopy(result)
    result.pop("execution_time", None)
    result["extra_data"].pop("submission")
    return result


def results(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(out.glob("*/results.json"))}


def progress_lines(stdout: str) -> list[str]:
    """The names of the per-submission lines ("alice: 81/81"), repeats kept."""
    return re.findall(r"^(\S+): \d+(?:\.\d+)?/\d+(?:\.\d+)?", stdout, re.M)


def autograde(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    result = run_grade("autograde", *args, env=env, timeout=timeout)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


#: the ``DASK_DISTRIBUTED__*`` exports of docs/cluster.md's Slurm job script (autograder's executor.QUIET), as
#: workers started by hand are given them
HOUSEKEEPING = dict(line.removeprefix("export ").split("=", 1) for line in re.findall(
    r'"(export DASK_DISTRIBUTED__[A-Z_]+=(?:False|\d+s))"', (ROOT / "docs" / "cluster.md").read_text()))


class CliCluster:
    """``dask scheduler`` and ``dask worker`` processes, each in a process group of its own: over TLS with the
    course's ``certificates`` (the cluster's for them, the grader's for the clients), or, given None, plain TCP
    (``--insecure-scheduler``); with docs/cluster.md's housekeeping (HOUSEKEEPING: idle, 1% of a core, not 12%)."""

    def __init__(self, base: Path, certificates: course_certificates.Certificates | None, workers: int = 2,
                 env: dict | None = None, worker_args: tuple[str, ...] = ()):
        self.certificates = certificates
        scheme, tls = ("tls", certificates.dask_args()) if certificates else ("tcp", [])
        self.base = base
        self.env = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(base), **HOUSEKEEPING, **(env or {})}
        where = base / "scheduler.json"
        self.procs = [self._start("scheduler", "--host", "127.0.0.1", "--port", "0", "--scheduler-file", str(where),
                                  "--no-dashboard", "--protocol", scheme, *tls)]
        self.address = scheduler_file.address(where, self.procs[0], base / "scheduler-0.log")
        for i in range(workers):
            self.procs.append(self._start("worker", self.address, "--nworkers", "1", "--nthreads", "1",
                                          "--host", "127.0.0.1", "--no-dashboard", "--name", f"w{i}", *tls,
                                          *worker_args))

        self.client = Client(self.address, timeout=60,
                             security=certificates.client_security() if certificates else None)
        self.client.wait_for_workers(workers, timeout=120)

    def grade_args(self) -> list[str]:
        """``grade autograde``'s options for this cluster: the address, and the grader's certificate (or
        ``--insecure-scheduler``)."""
        tls = self.certificates.grade_args() if self.certificates else ["--insecure-scheduler"]
        return ["--executor", "dask", "--scheduler", self.address, *tls]

    def _start(self, *args: str) -> subprocess.Popen:
        log = open(self.base / f"{args[0]}-{len(getattr(self, 'procs', []))}.log", "wb")  # noqa: SIM115 - the process writes it until it is stopped
        return subprocess.Popen([str(DASK), *args], cwd=self.base, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def worker_pids(self) -> dict[str, int]:
        """Each worker process's pid (the process a nanny restarts), by address."""
        return self.client.run(os.getpid)

    def close(self) -> None:
        self.client.close()
        for proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> course_certificates.Certificates:
    """The course's certificates, made by docs/cluster.md's commands."""
    return course_certificates.make(tmp_path_factory.mktemp("shared") / "attention")


@pytest.fixture(scope="module")
def cli_cluster(tmp_path_factory, certificates):
    cluster = CliCluster(tmp_path_factory.mktemp("dask-cli"), certificates)
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The class graded locally with --jobs 2: what every Dask run must equal."""
    base = tmp_path_factory.mktemp("local")
    subs = class_folder(base / "subs")
    out = base / "out"
    autograde(str(subs), "--out", str(out), "--jobs", "2")
    return {"subs": subs, "out": out, "results": {name: comparable(r) for name, r in results(out).items()}}


def assert_same_as_local(out: Path, local: dict, names) -> None:
    got = results(out)
    assert sorted(got) == sorted(names)
    for name in names:
        assert comparable(got[name]) == local["results"][source_of(name)], name
        page = (out / name / "feedback.html").read_text()  # the page too, written beside it by the client
        if name == source_of(name):  # the same words and pictures as the local run's page
            assert page == (local["out"] / name / "feedback.html").read_text(), name


# -- the same grades -----------------------------------------------------------------------------
def _without_times(text: str) -> str:
    return re.sub(r"\| \d+\.\d+ \|", "| (time) |", text)


def test_the_cli_cluster_grades_exactly_as_jobs_does(cli_cluster, local_run, tmp_path):
    out = tmp_path / "out"
    run = autograde(str(local_run["subs"]), "--out", str(out), *cli_cluster.grade_args())
    assert_same_as_local(out, local_run, CLASS)
    assert results(out)["alice"]["score"] == TOP and results(out)["dave"]["score"] == 0
    assert sorted(progress_lines(run.stdout)) == sorted(CLASS)
    assert f"graded {len(CLASS)} submission(s)" in run.stdout and f"Dask at {cli_cluster.address}" in run.stdout
    # the same summary, but for how long each submission took (the table of every submission has its time)
    assert _without_times((out / "summary.md").read_text()) == _without_times(
        (local_run["out"] / "summary.md").read_text())
    assert f"isolation: {best_here()}" in run.stdout  # the workers' own level, reported as locally
    # Dask's worker processes are daemonic (no multiprocessing children): the kit's forking works under them
    assert all(cli_cluster.client.run(lambda: __import__("multiprocessing").current_process().daemon).values())

    again = autograde(str(local_run["subs"]), "--out", str(out), *cli_cluster.grade_args())
    assert f"{len(CLASS)} submission(s) already graded with the same inputs: skipped" in again.stdout
    assert progress_lines(again.stdout) == []


def test_a_local_cluster_grades_exactly_as_jobs_does_and_leaves_nothing(local_run, tmp_path):
    # its own temp folder: on a shared machine, /tmp also holds other graders' folders, whose processes may end
    # (a batch's forked job) before their owner sweeps them
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    run = autograde(str(local_run["subs"]), "--out", str(out), "--executor", "dask", "--local-workers", "2",
                    env={"TMPDIR": str(scratch)})
    assert_same_as_local(out, local_run, CLASS)
    assert "Dask (2 local worker(s))" in run.stdout
    # no staging, scratch space or dask-scratch-space left in the temp folder: every process of the run has ended
    assert sorted(p.name for p in scratch.iterdir()) == []


# -- faults --------------------------------------------------------------------------------------
def test_a_worker_killed_mid_batch_loses_nothing_and_grades_nothing_twice(cli_cluster, local_run, tmp_path):
    subs = class_folder(tmp_path / "subs")  # killed once two are written: up to six still to grade
    names = sorted(p.name for p in subs.iterdir())
    out = tmp_path / "out"
    before = cli_cluster.worker_pids()
    proc = subprocess.Popen([sys.executable, "-m", "autograder.cli", "autograde", str(subs), "--out", str(out),
                             *cli_cluster.grade_args()],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(list(out.glob("*/results.json"))) >= 2, 300, "the first results")
        assert proc.poll() is None
        busy = wait_for(lambda: [a for a, keys in cli_cluster.client.processing().items() if keys], 60, "a busy worker")
        victim = before[busy[0]]  # a worker with a submission in progress
        os.kill(victim, signal.SIGKILL)
        written_at_kill = len(list(out.glob("*/results.json")))
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, stdout[-2000:] + stderr[-4000:]
    assert written_at_kill < len(names)  # the kill came mid-batch
    assert not alive(victim)
    # each submission graded and reported exactly once, with the grades of the local run
    assert sorted(progress_lines(stdout)) == names
    assert f"graded {len(names)} submission(s)" in stdout
    assert_same_as_local(out, local_run, names)
    # the nanny replaced the killed worker, and the replacement started its own warm grader
    after = wait_for(lambda: (pids := cli_cluster.worker_pids()) and len(pids) == 2 and pids, 60, "two workers again")
    assert victim not in after.values()


def test_a_client_killed_mid_batch_takes_its_workers_down_and_a_rerun_resumes(local_run, tmp_path):
    subs = class_folder(tmp_path / "subs")  # killed once three are written: up to five still to grade
    names = sorted(p.name for p in subs.iterdir())
    out = tmp_path / "out"
    args = [sys.executable, "-m", "autograder.cli", "autograde", str(subs), "--out", str(out), "--executor", "dask",
            "--local-workers", "2"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(list(out.glob("*/results.json"))) >= 3, 300, "the first results")
        tree: dict[int, str] = {}
        note_descendants(proc.pid, tree)  # Dask's workers, their zygote clones, the sandboxes
        assert len(tree) >= 3
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    wait_for(lambda: not still_running(tree), GONE_WITHIN, "every process of the killed run to die")
    kept = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("*/results.json")}
    assert 3 <= len(kept) < len(names)
    # what the killed run could not remove: its scratch folder (as root, the workers' uid's folder is inside it)
    left = [p for base in {tempfile.gettempdir(), "/tmp"} for p in Path(base).glob(f"grade-dask-{proc.pid}-*")]
    assert len(left) == 1, left

    rerun = autograde(*args[3:])
    assert not left[0].exists()  # swept by the rerun: a dead run's folder, its lock held by no one
    assert f"{len(kept)} submission(s) already graded with the same inputs: skipped" in rerun.stdout
    assert sorted(progress_lines(rerun.stdout)) == sorted(set(names) - set(kept))  # only the rest, once each
    assert {p.parent.name: p.stat().st_mtime_ns for p in out.glob("*/results.json") if p.parent.name in kept} == kept
    assert_same_as_local(out, local_run, names)


def test_submissions_that_crash_or_hang_their_worker_get_a_fair_zero_and_others_are_unaffected(cli_cluster, tmp_path,
                                                                                             short_course_file):
    # trickle_channel: a frame trickled a byte at a time while sleeping must not pin a Dask worker's thread
    hostile = ["os_exit_in_step", "segfault", "kill_parent", "infinite_loop", "trickle_channel"]
    subs = tmp_path / "subs"
    for name in hostile:
        shutil.copytree(ADVERSARIAL / name, subs / name)
    for name in ("alice", "bob"):
        shutil.copytree(SAMPLES / name, subs / name)
    out = tmp_path / "out"
    # the course with a 6 s step limit: the infinite loop spins 6 s, the trickle sleeps 6 s, not 20 each
    run = autograde(str(subs), "--out", str(out), "--course", str(short_course_file), *cli_cluster.grade_args())
    got = results(out)
    assert sorted(progress_lines(run.stdout)) == sorted([*hostile, "alice", "bob"])
    for name in hostile:
        lost = sorted({t["name"].split(" ", 1)[0] for t in got[name]["tests"] if t["status"] != "passed"})
        assert lost == sorted(ADV_MANIFEST[name]["steps"]), (name, ADV_MANIFEST[name]["why"])
        assert 0 < got[name]["score"] < TOP
    assert got["alice"]["score"] == TOP
    assert 0 < got["bob"]["score"] < TOP
    assert len(cli_cluster.worker_pids()) == 2  # no worker was lost to them


# -- isolation -----------------------------------------------------------------------------------
def test_the_local_executor_refuses_below_the_required_isolation_too(tmp_path):
    out = tmp_path / "out"
    refused = run_grade("autograde", str(SAMPLES / "alice"), "--out", str(out), "--require-isolation", "namespaces",
                        env={"AUTOGRADER_ISOLATION": "uid+rlimits"}, timeout=600)
    assert refused.returncode == 2 and "below the required namespaces" in refused.stderr
    assert not list(out.glob("*/results.json"))


def test_dask_options_need_the_dask_executor(tmp_path):
    wrong = run_grade("autograde", str(SAMPLES / "alice"), "--out", str(tmp_path), "--local-workers", "2", timeout=120)
    assert wrong.returncode == 2 and "--executor dask" in wrong.stderr


# -- the documented Slurm configuration ----------------------------------------------------------
def test_the_documented_slurm_configuration_starts_workers_that_grade(tmp_path):
    """docs/cluster.md's SLURMCluster, over TLS with the certificates its commands make: its job script's worker
    command, run here as a Slurm node would, grades for a client with the grader's certificate."""
    with documented_cluster(tmp_path) as documented:
        script, course = documented.script, documented.course
        for directive in ("#SBATCH -p grading", "#SBATCH -A cs-llm-course", "#SBATCH --cpus-per-task=8",
                          "#SBATCH -t 00:45:00", f"#SBATCH -e {course}/dask-logs/"):
            assert directive in script, script
        assert re.search(r"#SBATCH --mem=(29|30|32)G", script), script
        command = worker_command(script)
        assert "--nthreads 1" in command and "--nworkers 8" in command and "--lifetime 40m" in command, command
        # the workers speak TLS only, with the cluster's certificate
        cert, key = documented.certificates.cluster
        assert documented.cluster.scheduler_address.startswith("tls://"), documented.cluster.scheduler_address
        for option in ("--protocol tls://", f"--tls-ca-file {documented.certificates.ca}", f"--tls-cert {cert}",
                       f"--tls-key {key}"):
            assert option in command, command
        out = tmp_path / "results"
        run = autograde(str(SAMPLES / "alice"), "--out", str(out), "--executor", "dask",
                        "--scheduler", documented.cluster.scheduler_address, "--require-isolation", best_here(),
                        *documented.certificates.grade_args())
        assert results(out)["alice"]["score"] == TOP and "alice: " in run.stdout
