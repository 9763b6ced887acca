"""Deadline day on an nbgrader course: Ctrl-C while ``grade autograde --nbgrader`` grades the class, then the same
command again.

The feedback notebooks are built while the class is graded (``nbgrader_course/feedback_meanwhile.py``); they reach
``autograded/`` only with the gradebook's grades. Interrupted half way, the run leaves ``autograded/`` as it was and
nothing of its own in the course folder; the same command again grades the rest, skips what finished, and writes
every student's grades and notebooks, those of the students graded before the interrupt included.
"""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time

import pytest

from autograder.nbgrader_course import nbgrader_gradebook
from autograder.outputs.results import read


bench = pytest.importorskip("bench.nbgrader_side_by_side")

#: twelve students, so that the class is still being graded well after the first one's notebooks are built
WHO = {f"s{i:02d}": name for i, name in enumerate(["correct_einsum", "bug_no_scaling", "correct_loops", "stubs"] * 3)}


def test_ctrl_c_half_way_leaves_autograded_as_it_was_and_the_same_command_finishes_the_class(tmp_path,
                                                                                               nbgrader_bench_release):
    env = bench.jupyter_env(tmp_path / "jupyter")
    course, out = tmp_path / "course", tmp_path / "course" / "kit-results"
    shutil.copytree(nbgrader_bench_release, course, symlinks=True)  # the bench's released course, built once per run
    bench.hand_in(course, WHO)
    command = [sys.executable, "-m", "autograder.cli", "autograde", "--nbgrader", str(course), "--out", str(out)]

    run = subprocess.Popen(command, cwd=course, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ends = time.monotonic() + 600
    # a student's, built meanwhile
    while not list(course.glob(f".grade-autograded/meanwhile-*/*/{bench.ASSIGNMENT}/*.ipynb")):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < ends, "no feedback notebook was built while the class was graded"
        time.sleep(0.02)
    run.send_signal(signal.SIGINT)  # as Ctrl-C in the terminal
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 130, stderr[-3000:]
    assert "run the same command again to resume" in stderr and "interrupted after" in stderr, stderr[-3000:]
    finished = sorted(p.parent.name for p in out.glob("*/results.json"))
    assert 0 < len(finished) < len(WHO), finished
    assert not (course / "autograded").exists() and not (course / ".grade-autograded").exists()
    assert "Traceback" not in stderr

    again = subprocess.run(command, cwd=course, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{len(finished)} submission(s) already graded with the same inputs" in again.stdout
    assert f"grades of {len(WHO)} student(s) written to the gradebook" in again.stdout
    assert sorted(p.name for p in (course / "autograded").iterdir()) == sorted(WHO)
    assert not (course / ".grade-autograded").exists()
    # the control: a student graded before the interrupt has the notebooks the write-back builds from its results
    first = finished[0]
    built = nbgrader_gradebook.feedback_notebooks(course, bench.ASSIGNMENT, first,
                                                  course / "submitted" / first / bench.ASSIGNMENT,
                                                  read(out / first / "results.json").as_json(), into=tmp_path / "now")
    theirs = course / "autograded" / first / bench.ASSIGNMENT
    assert {p.name: p.read_bytes() for p in theirs.iterdir()} == {p.name: p.read_bytes() for p in built.iterdir()}
