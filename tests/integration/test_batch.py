"""`grade autograde` on a class: parallel jobs, resumable re-runs, a class summary, bad input handled.

End to end through the real CLI. Each full grading takes seconds, so the batches are small and shared:
one batch of three (alice, bob, dave) is graded once, then re-run, changed and forced on a copy.
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
import time
from pathlib import Path

import pytest

from autograder.course import load_course

from .conftest import ROOT, run_grade
from tests.support.processes import GONE_WITHIN, note_descendants, still_running
from tests.support.recorded_cases import record
from tests.support.submission_forms import module_notebooks

COURSE = load_course(ROOT / "course.yml")
TOP = COURSE.max_points()
SAMPLES = ROOT / "samples" / "submissions"
THREE = ("alice", "bob", "dave")


# -- helpers -------------------------------------------------------------------------------------
def copy_samples(folder: Path, names=THREE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copytree(SAMPLES / name, folder / name)
    return folder


def load(out: Path, name: str) -> dict:
    return json.loads((out / name / "results.json").read_text(encoding="utf-8"))


def snapshot(out: Path) -> dict[str, tuple[int, bytes]]:
    """Every submission's results.json: (mtime in ns, bytes)."""
    return {p.parent.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(out.glob("*/results.json"))}


def comparable(result: dict) -> dict:
    """A result without what may differ between two gradings of the same submission."""
    result = copy.deepcopy(result)
    result.pop("execution_time", None)
    for key in ("isolation", "submitted_at"):
        result.get("extra_data", {}).pop(key, None)
    return result


def differences(one: dict, two: dict) -> list[str]:
    """What differs between two comparable results, readably (for assertion messages)."""
    diffs = [f"{key}: {one.get(key)!r} != {two.get(key)!r}" for key in sorted(set(one) | set(two))
             if key != "tests" and one.get(key) != two.get(key)]
    for a, b in zip(one.get("tests", []), two.get("tests", [])):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                diffs.append(f"{a.get('name')} [{key}]: {a.get(key)!r} != {b.get(key)!r}")
    return diffs


def graded_lines(stdout: str) -> dict[str, str]:
    """The per-submission progress lines ("alice: 81/81"), by name."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^(\S+): (\d+(?:\.\d+)?/\d+(?:\.\d+)?.*)$", stdout, re.M)}


def autograde(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    result = run_grade("autograde", *args, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """alice (correct), bob (no scaling), dave (stubs), graded with two jobs."""
    base = tmp_path_factory.mktemp("batch")
    subs = copy_samples(base / "subs")
    out = base / "out"
    result = autograde(str(subs), "--out", str(out), "--jobs", "2")
    return {"base": base, "subs": subs, "out": out, "run": result}


# -- one batch -----------------------------------------------------------------------------------
def test_every_submission_gets_results_with_its_identity(batch):
    out = batch["out"]
    assert sorted(p.parent.name for p in out.glob("*/results.json")) == sorted(THREE)
    hashes = set()
    for name in THREE:
        result = load(out, name)
        extra = result["extra_data"]
        assert set(extra) >= {"submission", "submitted_at", "submission_hash", "grader_hash", "isolation"}
        assert extra["submission"] == name
        assert extra["submitted_at"] is None  # the submission's own files never say (intake/times.py)
        assert re.fullmatch(r"[0-9a-f]{16}", extra["submission_hash"])
        assert re.fullmatch(r"[0-9a-f]{16}", extra["grader_hash"])
        assert extra["isolation"] and " " not in extra["isolation"]
        assert result["score"] == sum(t["score"] for t in result["tests"])
        hashes.add(extra["submission_hash"])
    assert len(hashes) == 3
    assert len({load(out, n)["extra_data"]["grader_hash"] for n in THREE}) == 1
    assert load(out, "alice")["score"] == TOP
    assert 0 < load(out, "bob")["score"] < TOP
    assert load(out, "dave")["score"] == 0
    assert not list(out.rglob(".tmp-*"))


def test_the_run_reports_each_submission_and_the_total(batch):
    stdout = batch["run"].stdout
    lines = graded_lines(stdout)
    assert set(lines) == set(THREE)
    assert lines["alice"].startswith(f"{TOP:g}/{TOP:g}")
    assert "graded 3 submission(s)" in stdout and "with 2 job(s)" in stdout
    assert "1 full marks, 1 partial, 1 zero" in stdout
    assert "already graded" not in stdout


def test_the_class_summary_matches_the_results(batch):
    out = batch["out"]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    results = {name: load(out, name) for name in THREE}
    scores = sorted(r["score"] for r in results.values())
    assert summary["submissions"] == 3 and summary["max_score"] == TOP
    assert summary["full_marks"] == 1 and summary["zero"] == 1
    assert summary["min"] == scores[0] and summary["max"] == scores[-1] and summary["median"] == scores[1]
    assert summary["mean"] == pytest.approx(sum(scores) / 3, abs=1e-3)
    buckets = [b["submissions"] for b in summary["distribution"]]
    assert len(buckets) == 10 and sum(buckets) == 3
    assert buckets[0] >= 1 and buckets[9] >= 1  # dave's 0 and alice's full marks
    for score in scores:
        assert buckets[min(9, int(10 * score / TOP))] >= 1
    assert list(summary["steps"]) == list(COURSE.steps)
    for step, row in summary["steps"].items():
        passed = sum(all(t["status"] == "passed" for t in r["tests"] if t["name"].startswith(step + " "))
                     for r in results.values())
        assert row["passed"] == passed, step
        assert row["pass_rate"] == pytest.approx(passed / 3, abs=1e-4)
        assert row["title"] == COURSE.steps[step].title
    # bob's missing scaling costs trainable_attention.scaled_attention_weights: only alice passes it
    assert summary["steps"]["trainable_attention.scaled_attention_weights"]["passed"] == 1
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert md.startswith("# Class summary: 3 submissions")
    assert "| 90-100% | " in md and "| 0-10% | " in md
    for step, row in summary["steps"].items():
        assert f"| {step} ({row['title']}) | {row['passed']} | {100 * row['pass_rate']:.0f}% |" in md


# -- re-runs: skip, regrade what changed, --force ------------------------------------------------
@pytest.fixture(scope="module")
def reruns(batch, tmp_path_factory):
    base = tmp_path_factory.mktemp("reruns")
    subs, out = base / "subs", base / "out"
    shutil.copytree(batch["subs"], subs)
    shutil.copytree(batch["out"], out)
    steps = {"first": snapshot(out)}
    steps["again"] = autograde(str(subs), "--out", str(out), "--jobs", "2")
    steps["after_again"] = snapshot(out)
    bob = subs / "bob" / "simple_attention.py"
    original = bob.read_bytes()
    bob.write_bytes(original + b"\n# a comment added after the deadline\n")
    steps["changed"] = autograde(str(subs), "--out", str(out), "--jobs", "2")
    steps["after_changed"] = snapshot(out)
    bob.write_bytes(original)
    steps["forced"] = autograde(str(subs), "--out", str(out), "--jobs", "1", "--force")
    steps["after_forced"] = snapshot(out)
    steps["out"] = out
    return steps


def test_a_rerun_skips_what_is_already_graded(reruns):
    stdout = reruns["again"].stdout
    assert "3 submission(s) already graded with the same inputs: skipped" in stdout
    assert "graded 0 submission(s)" in stdout
    assert graded_lines(stdout) == {}
    assert reruns["after_again"] == reruns["first"]  # same bytes, same mtimes
    summary = json.loads((reruns["out"] / "summary.json").read_text())
    assert summary["submissions"] == 3


def test_a_changed_submission_alone_is_regraded(reruns):
    stdout = reruns["changed"].stdout
    assert "2 submission(s) already graded with the same inputs: skipped" in stdout
    assert "graded 1 submission(s)" in stdout
    assert set(graded_lines(stdout)) == {"bob"}
    before, after = reruns["after_again"], reruns["after_changed"]
    for name in ("alice", "dave"):
        assert after[name] == before[name]
    assert after["bob"] != before["bob"]
    old, new = json.loads(before["bob"][1]), json.loads(after["bob"][1])
    assert new["extra_data"]["submission_hash"] != old["extra_data"]["submission_hash"]
    assert new["score"] == old["score"]  # a comment changes nothing else


def test_force_regrades_everything(reruns):
    stdout = reruns["forced"].stdout
    assert "already graded" not in stdout
    assert "graded 3 submission(s)" in stdout and "with 1 job(s)" in stdout
    assert set(graded_lines(stdout)) == set(THREE)
    before, after = reruns["after_changed"], reruns["after_forced"]
    for name in THREE:
        assert after[name][0] > before[name][0], name


def test_one_job_and_two_jobs_grade_alike(batch, reruns):
    """Graded with --jobs 2 (the first batch) and --jobs 1 (forced): the same results."""
    for name in THREE:
        two = load(batch["out"], name)
        one = json.loads(reruns["after_forced"][name][1])
        assert comparable(one) == comparable(two), f"{name}: " + "\n".join(
            differences(comparable(one), comparable(two)))


# -- interrupted batches -------------------------------------------------------------------------
def test_a_batch_killed_half_way_resumes(tmp_path, scratch_dir):
    names = [f"{name}{i}" for i in (1, 2) for name in THREE]
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in names:
        shutil.copytree(SAMPLES / name[:-1], subs / name)
    out = tmp_path / "out"
    scratch = scratch_dir  # kill -9 leaves the batch's staging folder behind: keep it in a folder of the test's
    env = {**os.environ, "TMPDIR": str(scratch)}
    log = (tmp_path / "killed.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "autograder.cli", "autograde", str(subs), "--out", str(out),
                                "--jobs", "2"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                               env=env, start_new_session=True)
    spawned: dict[int, str] = {}  # pid -> when it started: a pid reused later is not the batch's
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and process.poll() is None:
            note_descendants(process.pid, spawned)
            if list(out.glob("*/results.json")):
                break
            time.sleep(0.05)
        assert process.poll() is None, "the batch ended before a single results.json appeared"
        note_descendants(process.pid, spawned)
        assert len(spawned) >= 4, spawned  # jobs, the zygote and its clones, hosts, workers
        os.kill(process.pid, signal.SIGKILL)  # the grader alone, as `kill -9 PID` does: not its process group
        process.wait(timeout=30)
        killed_at = time.monotonic()
    finally:
        log.close()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    try:
        # nothing the batch started outlives it (jobs, zygotes, hosts, workers): each dies with its parent, a chain
        # the kernel runs at once, but each link needs the CPU to exit, so the wait ends when they are all gone
        while time.monotonic() < killed_at + GONE_WITHIN and still_running(spawned):
            time.sleep(0.05)
        left = still_running(spawned)
        assert left == [], f"processes still running {GONE_WITHIN:.0f} s after the batch was killed: {left}"
    finally:
        for pid in still_running(spawned):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    finished = snapshot(out)
    assert 1 <= len(finished) < len(names), finished.keys()
    for name, (_, data) in finished.items():
        result = json.loads(data)  # never half-written
        assert result["extra_data"]["submission"] == name and "score" in result
    for folder in out.iterdir():
        if folder.is_dir():
            assert [p.name for p in folder.glob("*.json") if not p.name.startswith(".tmp-")] in ([], ["results.json"])

    rerun = run_grade("autograde", str(subs), "--out", str(out), "--jobs", "2", env={"TMPDIR": str(scratch)})
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{len(finished)} submission(s) already graded with the same inputs: skipped" in rerun.stdout
    assert f"graded {len(names) - len(finished)} submission(s)" in rerun.stdout
    assert set(graded_lines(rerun.stdout)) == set(names) - set(finished)
    after = snapshot(out)
    assert sorted(after) == sorted(names)
    for name in finished:
        assert after[name] == finished[name], name
    for name in names:
        assert [p.name for p in (out / name).iterdir() if p.name.endswith("results.json")] == ["results.json"]
        assert load(out, name)["score"] == load(out, names[THREE.index(name[:-1])])["score"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["submissions"] == len(names)
    # the killed run's folders in the temp folder were swept by the resumed run, which left none of its own
    assert sorted(p.name for p in scratch.iterdir()) == []


# -- what cannot be graded -----------------------------------------------------------------------
def test_a_corrupt_zip_and_an_empty_folder_score_zero_with_a_message(tmp_path):
    subs = copy_samples(tmp_path / "subs", ["alice"])
    (subs / "frank.zip").write_bytes(b"PK\x03\x04 this is not really a zip archive " * 20)
    (subs / "eve").mkdir()
    out = tmp_path / "out"
    run = autograde(str(subs), "--out", str(out), "--jobs", "1")
    assert sorted(p.parent.name for p in out.glob("*/results.json")) == ["alice", "eve", "frank"]
    frank, eve, alice = load(out, "frank"), load(out, "eve"), load(out, "alice")
    assert frank["score"] == 0 and eve["score"] == 0
    assert "This submission could not be graded: frank.zip is not a valid .zip archive" in frank["output"]
    assert "This submission could not be graded: eve/: none of" in eve["output"]
    for result in (frank, eve):
        assert len(result["tests"]) == len(alice["tests"])
        assert all(t["status"] == "failed"
                   and t["output"] == "not graded; the message at the top of your feedback says why"
                   for t in result["tests"])
        assert result["extra_data"]["submission_hash"]
    assert alice["score"] == TOP
    lines = graded_lines(run.stdout)
    assert lines["frank"].startswith(f"0/{TOP:g}") and "not a valid .zip archive" in lines["frank"]
    assert lines["eve"].startswith(f"0/{TOP:g}")
    assert "graded 3 submission(s)" in run.stdout and "1 full marks, 0 partial, 2 zero" in run.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["submissions"] == 3 and summary["zero"] == 2


def test_a_mistake_in_course_yml_stops_before_grading(tmp_path):
    subs = copy_samples(tmp_path / "subs", ["alice"])
    text = (ROOT / "course.yml").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.strip() == "simple_attention.attention_scores:")
    typo = next(i for i in range(start, len(lines)) if lines[i].strip().startswith("counts:"))
    lines[typo] = lines[typo].replace("counts:", "cuonts:", 1)
    course = tmp_path / "course" / "course.yml"
    course.parent.mkdir()
    course.write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "out"
    result = run_grade("autograde", str(subs), "--out", str(out), "--course", str(course), timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"course.yml, line {typo + 1}: steps.simple_attention.attention_scores.cuonts: unknown key 'cuonts'" \
        in result.stderr
    assert "did you mean 'counts'?" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(out.rglob("results.json")) and not (out / "summary.json").exists()


def test_a_run_leaves_nothing_in_the_temp_folder_and_sweeps_dead_runs(tmp_path, scratch_dir):
    scratch = scratch_dir
    dead = scratch / "grade-root-999999999-abcd"  # a killed run's: its process is gone
    dead.mkdir()
    (scratch / "grade-scratch-999999999-x" / "work").mkdir(parents=True)
    live = scratch / f"grade-staging-{os.getpid()}-keep"  # a live process's: not ours to remove
    live.mkdir()
    subs = copy_samples(tmp_path / "subs", ["alice", "bob"])
    result = run_grade("autograde", str(subs), "--out", str(tmp_path / "out"), env={"TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in scratch.iterdir()) == [live.name]


def test_the_graders_own_errors_are_logged_named_and_fail_the_run(tmp_path):
    """A bug in a hidden suite: the student reads that the grader failed, the instructor gets the traceback."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "course.yml", course / "course.yml")
    shutil.copytree(ROOT / "solutions", course / "solutions")
    suites = course / "autograder" / "unit" / "suites"
    shutil.copytree(ROOT / "autograder" / "unit" / "suites", suites)
    path = suites / "test_simple_attention.py"
    text = path.read_text()
    marker = "    def test_randomized(self, check):\n"  # a hidden count: grade assign records the public ones as before
    assert marker in text
    path.write_text(text.replace(marker, marker + "        raise RuntimeError('a bug in the suite: boom')\n", 1))
    record(course / "course.yml")  # the suites changed: their public cases are recorded again
    subs = copy_samples(tmp_path / "subs", ["alice"])
    out = tmp_path / "out"
    result = run_grade("autograde", str(subs), "--out", str(out), "--course", str(course / "course.yml"))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "the grader itself failed while grading 1 submission(s) (alice)" in result.stderr
    log = (out / "grader_errors.log").read_text()
    assert "=== alice ===" in log and "boom" in log
    assert json.loads((out / "summary.json").read_text())["grader_errors"] == ["alice"]
    assert "The grader itself failed" in (out / "summary.md").read_text()
    alice = load(out, "alice")
    assert alice["extra_data"]["grader_errors"] >= 1
    assert all("boom" not in t["output"] for t in alice["tests"])  # the traceback is the instructor's


def test_a_students_own_line_is_never_redacted(tmp_path):
    """A notebook whose indentation is broken on a line that the reference also has: the student sees it."""
    folder = tmp_path / "py"
    folder.mkdir()
    for source in (ROOT / "solutions").glob("*.py"):
        kept = [line for line in source.read_text().splitlines(True) if "### " not in line or "SOLUTION" not in line]
        (folder / source.name).write_text("".join(kept))
    path = folder / "simple_attention.py"
    text = path.read_text()
    line = "    return inputs @ query\n"
    assert line in text
    path.write_text(text.replace(line, "      return inputs @ query\n", 1))  # unexpected indent
    subs = tmp_path / "subs"
    module_notebooks(folder, subs / "nina")
    out = tmp_path / "out"
    autograde(str(subs), "--out", str(out))
    outputs = "\n".join(t["output"] for t in load(out, "nina")["tests"] if t["name"].startswith("simple_attention."))
    assert "IndentationError" in outputs or "unexpected indent" in outputs
    assert "return inputs @ query" in outputs
    assert "[removed" not in outputs
