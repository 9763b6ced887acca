"""Fixtures for what many tests read and none changes, each built once per run (tests/support/once.py): the sample
class graded with the defaults, ``grade release``'s bundle, ``grade gradescope``'s zip, the course with a short step
limit, the nbgrader bench's released course.

A test that changes one of them copies it first (test_feedback_pages' regrade copies the class and its results).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_grade
from tests.support.once import built_once
from tests.support.short_course import short_course

SAMPLES = ROOT / "samples" / "submissions"
SAMPLE_CLASS = ("alice", "bob", "carol", "dave")
BUNDLE = "attention-exercises"


def _said(done) -> dict:
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


@pytest.fixture(scope="session")
def graded_samples(tmp_path_factory) -> dict:
    """samples/submissions (alice correct, bob one bug, carol another, dave the stubs) copied into a class folder
    and graded by ``grade autograde`` with its defaults: {"subs", "out", "stdout", "stderr", "returncode"}."""
    def build(folder: Path) -> dict:
        for name in SAMPLE_CLASS:
            shutil.copytree(SAMPLES / name, folder / "class" / name)
        return _said(run_grade("autograde", str(folder / "class"), "--out", str(folder / "results")))

    folder, said = built_once(tmp_path_factory, "graded-samples", build)
    assert said["returncode"] == 0, said["stdout"][-3000:] + said["stderr"][-3000:]
    return {"subs": folder / "class", "out": folder / "results", **said}


def sample_results(graded: dict, *names: str) -> dict[str, dict]:
    return {name: json.loads((graded["out"] / name / "results.json").read_text()) for name in names}


@pytest.fixture(scope="session")
def release_bundle(tmp_path_factory) -> Path:
    """``grade release``'s bundle folder (its zip beside it)."""
    folder, said = built_once(tmp_path_factory, "release",
                              lambda folder: _said(run_grade("release", "--out", str(folder / BUNDLE), timeout=300)))
    assert said["returncode"] == 0, said["stdout"] + said["stderr"]
    return folder / BUNDLE


@pytest.fixture(scope="session")
def gradescope_zip(tmp_path_factory) -> Path:
    """``grade gradescope``'s autograder zip."""
    folder, said = built_once(tmp_path_factory, "gradescope", lambda folder: _said(
        run_grade("gradescope", "--out", str(folder / "autograder.zip"), timeout=300)))
    assert said["returncode"] == 0, said["stdout"] + said["stderr"]
    return folder / "autograder.zip"


@pytest.fixture(scope="session")
def nbgrader_bench_release(tmp_path_factory) -> Path:
    """The nbgrader course of bench/nbgrader_side_by_side.py, released (``grade nbgrader`` and ``nbgrader
    generate_assignment``) and with no student yet: a test copies it and hands in its own class
    (``bench.hand_in``)."""
    bench = pytest.importorskip("bench.nbgrader_side_by_side")
    if not bench.NBGRADER.exists():
        pytest.skip("nbgrader is not installed (pip install -e '.[test]')")
    folder, _ = built_once(tmp_path_factory, "nbgrader-bench-release", lambda folder: bench.make_course(
        folder / "course", {}, bench.jupyter_env(folder / "jupyter")))
    return folder / "course"


@pytest.fixture(scope="session")
def short_course_file(tmp_path_factory) -> Path:
    """The course.yml of a copy of the course whose step limit is 6 s (tests/support/short_course.py), its public
    cases recorded once for the run."""
    folder, _ = built_once(tmp_path_factory, "short-course", lambda folder: str(short_course(folder / "course")))
    return folder / "course" / "course.yml"
