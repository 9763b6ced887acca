"""Ctrl-C on `grade autograde`: the batch stops at once, keeps what finished, writes the class summary of it,
kills every process it started, says how to resume and exits 130; a re-run grades only the rest.

SIGINT is sent as a terminal sends it (to the whole foreground process group: the batch runs in a session of
its own here) and to the main process alone (``kill -INT PID``), on the local executor (``--jobs``) and on a
Dask LocalCluster. The class is large enough (12 submissions) for the interrupt to land mid-batch: it is sent
once a couple of results.json are written, when ten submissions (several seconds of grading on two jobs) are left
(on a running scheduler's one worker, which grades one at a time, 8 submissions leave six).

On a running scheduler (``--scheduler``) the workers are not ours: the rest is cancelled, the cluster goes on.

Time bounds are generous (a loaded machine): Ctrl-C to exit takes about a second here. Before Ctrl-C was
handled, the batch went on grading every submission it had queued, then exited 1 ("Aborted!") with no
class summary.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT, run_grade
from tests.support.processes import descendants, note_descendants, still_running

SAMPLES = ROOT / "samples" / "submissions"
#: from SIGINT to the exit of `grade autograde`: about 1 s measured; generous for a loaded machine
STOPS_WITHIN = 15.0
#: from that exit until no process the batch started is left
GONE_WITHIN = 5.0
MESSAGE = re.compile(r"interrupted after (\d+) of (\d+); run the same command again to resume")


# -- helpers -------------------------------------------------------------------------------------
def make_class(folder: Path, copies: int = 3) -> list[str]:
    """``copies`` of each sample submission (alice, bob, carol, dave): 12 by default."""
    names = []
    for i in range(copies):
        for sample in sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()):
            shutil.copytree(SAMPLES / sample, folder / f"{sample}{i:02d}")
            names.append(f"{sample}{i:02d}")
    return names


def snapshot(out: Path) -> dict[str, tuple[int, bytes]]:
    """Every submission's results.json: (mtime in ns, bytes)."""
    return {p.parent.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(out.glob("*/results.json"))}


def graded_lines(stdout: str) -> set[str]:
    """The submissions a run reported graded ("alice00: 81/81")."""
    return set(re.findall(r"^(\S+): \d+(?:\.\d+)?/\d+(?:\.\d+)?", stdout, re.M))


class Batch:
    """`grade autograde` started as a terminal's shell starts it: a process group (here a session) of its own."""

    def __init__(self, tmp_path: Path, subs: Path, *options: str, scratch: Path) -> None:
        self.out = tmp_path / "out"
        self.scratch = scratch  # the batch's temporary folders, kept apart from the machine's (conftest's scratch_dir)
        self.log_path = tmp_path / "interrupted.log"
        self.command = [sys.executable, "-m", "autograder.cli", "autograde", str(subs), "--out", str(self.out),
                        *options]
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(self.command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                            env={**os.environ, "TMPDIR": str(self.scratch)}, start_new_session=True)
        self.born: dict[int, str] = {}  # what it started, pid -> start time: a pid reused later is not ours to kill

    def note_spawned(self) -> None:
        note_descendants(self.process.pid, self.born)

    def wait_for_results(self, at_least: int = 2, timeout: float = 900) -> None:
        """Until ``at_least`` results.json are written, noting every process the batch starts meanwhile."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            self.note_spawned()
            if len(list(self.out.glob("*/results.json"))) >= at_least:
                break
            time.sleep(0.05)
        assert self.process.poll() is None, "the batch ended before it could be interrupted:\n" + self.log()
        self.note_spawned()

    def interrupt(self, to: str) -> None:
        """SIGINT as Ctrl-C on a terminal sends it (``group``), or to the main process alone (``main``)."""
        self.note_spawned()
        if to == "group":
            os.killpg(os.getpgid(self.process.pid), signal.SIGINT)
        else:
            os.kill(self.process.pid, signal.SIGINT)

    def wait(self, timeout: float) -> float:
        """Seconds until the batch exited (at most ``timeout``; then it is killed and the test fails)."""
        start = time.monotonic()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"still running {timeout:.0f} s after Ctrl-C:\n{self.log()}")
        return time.monotonic() - start

    def left(self, within: float = GONE_WITHIN) -> list[int]:
        """The processes the batch started that are still alive ``within`` seconds after it exited."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline and self._alive():
            time.sleep(0.05)
        return self._alive()

    def unswept(self) -> list[str]:
        """What is left in the batch's temporary folder that no later run sweeps: all but the kit's own ``grade-*``
        folders (a job killed with a folder of multiprocessing's own there, ``pymp-*``, would leave it for good)."""
        return sorted(p.name for p in self.scratch.iterdir() if not p.name.startswith("grade-"))

    def _alive(self) -> list[int]:
        return still_running(self.born)

    def kill(self) -> None:
        """Whatever is left: the test failed, do not leave it running."""
        if self.process.poll() is None:
            with_suppressed(os.killpg, self.process.pid, signal.SIGKILL)
            self.process.wait()
        for pid in self._alive():
            with_suppressed(os.kill, pid, signal.SIGKILL)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def with_suppressed(call, *args) -> None:
    try:
        call(*args)
    except OSError:
        pass


@pytest.fixture(scope="module", autouse=True)
def answers_kept(graded_samples):
    """The sample class graded once before any batch here (the run's, tests/support/built_for_the_run.py): its
    reference answers are kept, so a batch interrupted here leaves no reference worker's folder, whatever ran
    before it on either xdist worker (the folder of an interrupted run's reference worker is swept when a later
    run starts one, and a re-run that finds every answer kept starts none)."""
    return graded_samples


@pytest.fixture
def batch_of(tmp_path, scratch_dir):
    started: list[Batch] = []

    def start(subs: Path, *options: str) -> Batch:
        started.append(Batch(tmp_path, subs, *options, scratch=scratch_dir))
        return started[-1]

    yield start
    for batch in started:
        batch.kill()


def assert_stopped_cleanly(batch: Batch, names: list[str], seconds: float) -> set[str]:
    """Exit 130 soon after Ctrl-C, the message, every process gone, the results and the summary of what finished.

    Returns the submissions that finished."""
    log = batch.log()
    assert batch.process.returncode == 130, f"exit status {batch.process.returncode}:\n{log}"
    assert seconds < STOPS_WITHIN, f"{seconds:.1f} s from Ctrl-C to exit:\n{log}"
    assert batch.left() == [], f"processes still running {GONE_WITHIN:.0f} s after the batch exited"
    assert "Aborted!" not in log and "Traceback" not in log, log

    finished = set(snapshot(batch.out))
    assert 1 <= len(finished) < len(names), f"the interrupt did not land mid-batch: {sorted(finished)}"
    for name in finished:
        result = json.loads((batch.out / name / "results.json").read_text(encoding="utf-8"))  # never half-written
        assert result["extra_data"]["submission"] == name and "score" in result and result["tests"]
    said = MESSAGE.search(log)
    assert said, log
    # each finished submission is counted, but for one whose job was stopped between its write and its word
    assert int(said.group(2)) == len(names) and len(finished) - 2 <= int(said.group(1)) <= len(finished), (
        said[0], len(finished))

    # the class summary: written, of the finished submissions only
    for name in ("summary.json", "summary.md", "summary.html"):
        assert (batch.out / name).is_file(), name
    summary = json.loads((batch.out / "summary.json").read_text(encoding="utf-8"))
    assert summary["submissions"] == len(finished)
    assert sum(bucket["submissions"] for bucket in summary["distribution"]) == len(finished)
    named = {s["submission"] for s in summary["slowest"]}
    named |= {who for found in summary["misconceptions"].values() for m in found for who in m["who"]}
    assert named and named <= finished, named - finished
    assert batch.unswept() == []  # nothing of the run in the temporary folder but what the next run sweeps
    return finished


def assert_resumes(batch: Batch, names: list[str], finished: set[str], *options: str) -> None:
    """The same command again: it grades only the rest; nothing lost, nothing graded twice."""
    before = snapshot(batch.out)
    rerun = run_grade(*batch.command[3:], env={"TMPDIR": str(batch.scratch)})
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{len(finished)} submission(s) already graded with the same inputs: skipped" in rerun.stdout, rerun.stdout
    assert graded_lines(rerun.stdout) == set(names) - finished
    after = snapshot(batch.out)
    assert sorted(after) == sorted(names)
    for name in finished:
        assert after[name] == before[name], f"{name} was graded again"
    assert json.loads((batch.out / "summary.json").read_text())["submissions"] == len(names)
    # the interrupted run's temporary folders were swept by the re-run, which left none of its own
    assert sorted(p.name for p in batch.scratch.iterdir()) == []


# -- the local executor --------------------------------------------------------------------------
@pytest.mark.parametrize("to", ["group", "main"])
def test_ctrl_c_stops_the_jobs_keeps_what_finished_and_resumes(tmp_path, batch_of, to):
    subs = tmp_path / "subs"
    names = make_class(subs)
    batch = batch_of(subs, "--jobs", "2")
    batch.wait_for_results()
    assert len(batch.born) >= 6, batch.born  # two jobs, the zygote and its clones, hosts, workers
    batch.interrupt(to)
    seconds = batch.wait(timeout=120)
    print(f"--jobs 2, SIGINT to the {to}: exited {seconds:.2f} s after it")
    finished = assert_stopped_cleanly(batch, names, seconds)
    assert_resumes(batch, names, finished)


def test_a_job_killed_after_its_answers_leaves_no_folder_nobody_sweeps(tmp_path, batch_of):
    """A class of failing submissions (each answer carries the evidence's tensors), --jobs 2, Ctrl-C once the batch
    has said a grade (its job has answered): what is left in the temporary folder is the kit's own, which the next
    run sweeps. The control is the answer sent through the channel's own pickler: torch shares a tensor's memory
    from a thread listening in a pymp-* folder, and the killed job left it there."""
    subs = tmp_path / "subs"
    for i in range(6):
        shutil.copytree(SAMPLES / "bob", subs / f"bob{i:02d}")
    batch = batch_of(subs, "--jobs", "2")
    deadline = time.monotonic() + 900
    while not graded_lines(batch.log()) and batch.process.poll() is None and time.monotonic() < deadline:
        batch.note_spawned()
        time.sleep(0.05)
    assert graded_lines(batch.log()) and batch.process.poll() is None, batch.log()
    batch.interrupt("group")
    batch.wait(timeout=120)
    assert batch.process.returncode == 130, batch.log()
    assert batch.left() == []
    assert batch.unswept() == []


def test_ctrl_c_stops_a_single_job_too(tmp_path, batch_of):
    subs = tmp_path / "subs"
    names = make_class(subs)
    batch = batch_of(subs, "--jobs", "1")
    batch.wait_for_results()
    batch.interrupt("group")
    seconds = batch.wait(timeout=120)
    print(f"--jobs 1: exited {seconds:.2f} s after SIGINT")
    assert_stopped_cleanly(batch, names, seconds)


def test_a_second_ctrl_c_stops_at_once(tmp_path, batch_of):
    """Two presses in a row: exit 130 at once, every process gone; what was written is whole; a re-run resumes."""
    subs = tmp_path / "subs"
    names = make_class(subs)
    batch = batch_of(subs, "--jobs", "2")
    batch.wait_for_results()
    batch.interrupt("group")
    time.sleep(0.05)
    batch.interrupt("group")
    seconds = batch.wait(timeout=120)
    print(f"two Ctrl-C: exited {seconds:.2f} s after the first")
    assert batch.process.returncode == 130, batch.log()
    assert seconds < STOPS_WITHIN
    assert batch.left() == [], f"processes still running {GONE_WITHIN:.0f} s after the batch exited"
    assert "Aborted!" not in batch.log()
    finished = set(snapshot(batch.out))
    for name in finished:
        assert json.loads((batch.out / name / "results.json").read_text(
            encoding="utf-8"))["extra_data"]["submission"] == name
    assert_resumes(batch, names, finished)


def test_ctrl_c_before_grading_starts_exits_130(tmp_path, batch_of):
    """While the grader starts (course, reference, zygote): no summary to write, but the same exit."""
    subs = tmp_path / "subs"
    make_class(subs, copies=1)
    batch = batch_of(subs, "--jobs", "2")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not descendants(batch.process.pid):  # the zygote is starting
        time.sleep(0.02)
    batch.note_spawned()
    batch.interrupt("group")
    seconds = batch.wait(timeout=120)
    assert batch.process.returncode == 130, batch.log()
    assert seconds < STOPS_WITHIN
    assert batch.left() == []
    assert "run the same command again to resume" in batch.log() and "Traceback" not in batch.log(), batch.log()


# -- Dask: a LocalCluster ------------------------------------------------------------------------
@pytest.mark.parametrize("to", ["group", "main"])
def test_ctrl_c_stops_a_local_dask_cluster(tmp_path, batch_of, to):
    pytest.importorskip("distributed")
    subs = tmp_path / "subs"
    names = make_class(subs)
    batch = batch_of(subs, "--executor", "dask", "--local-workers", "2")
    batch.wait_for_results()
    batch.interrupt(to)
    seconds = batch.wait(timeout=120)
    print(f"Dask, 2 local workers, SIGINT to the {to}: exited {seconds:.2f} s after it")
    finished = assert_stopped_cleanly(batch, names, seconds)
    if to == "group":
        assert_resumes(batch, names, finished)


# -- Dask: a running scheduler -------------------------------------------------------------------
def test_ctrl_c_on_a_running_scheduler_cancels_the_rest(tmp_path, batch_of):
    """The workers are not ours: Ctrl-C cancels what is left; the cluster is unharmed and the re-run uses it."""
    pytest.importorskip("distributed")
    from tests.support import course_certificates  # noqa: PLC0415 - optional: the cluster extra
    from tests.system.test_cluster import CliCluster  # noqa: PLC0415 - optional: the cluster extra

    base = tmp_path / "cluster"
    base.mkdir()
    # one worker: the cancel and the cluster left running need no more; it grades one submission at a time, so
    # eight leave the interrupt six or more to cancel
    cluster = CliCluster(base, course_certificates.make(tmp_path / "shared" / "attention"), workers=1)
    try:
        subs = tmp_path / "subs"
        names = make_class(subs, copies=2)
        batch = batch_of(subs, *cluster.grade_args())
        batch.wait_for_results()
        batch.interrupt("group")
        seconds = batch.wait(timeout=120)
        print(f"Dask, a running scheduler: exited {seconds:.2f} s after SIGINT")
        finished = assert_stopped_cleanly(batch, names, seconds)
        assert all(proc.poll() is None for proc in cluster.procs), "a process of the cluster was stopped"
        assert_resumes(batch, names, finished)
    finally:
        cluster.close()


@pytest.mark.unit
def test_a_zygote_whose_parent_went_before_saying_where_the_kit_is_ends_without_a_word():
    """Ctrl-C reaches `grade autograde` as it starts its zygote, before it writes the zygote's first line: the
    zygote (a session of its own, its stderr the user's terminal) reads an empty line and ends, saying nothing."""
    from autograder.sandbox.zygote import _BOOT  # noqa: PLC0415 - the zygote's first lines, as it runs them

    ended = subprocess.run([sys.executable, "-I", "-S", "-c", _BOOT, "0", str(os.getpid()), "0", "rlimits"],
                           input=b"", capture_output=True, timeout=60)
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, b"", b"")
