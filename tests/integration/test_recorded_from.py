"""What ships matches what grades: the public cases say what they were recorded from, and grade release, grade
gradescope, grade nbgrader and grade autograde refuse, with the command to run, after a change to the solutions, the
suites or course.yml that grade assign has not recorded, at once (before torch loads); after grade assign, each goes
ahead (the control)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.assign import recorded_from
from autograder.check import public_cases

from .conftest import ROOT

KIT = ("autograder", "solutions", "exercises", "course.yml", "pyproject.toml", "README.md")


def copy_kit(dest: Path) -> Path:
    dest.mkdir()
    for name in KIT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        else:
            shutil.copyfile(source, dest / name)
    return dest


#: ``grade ARGS`` as ``python -m autograder.cli`` runs it, saying last on its standard error whether torch was loaded
SAYS_IF_TORCH_LOADED = ("import sys\nfrom autograder.cli import main\ncode = 0\ntry:\n    main(sys.argv[1:])\n"
                        "except SystemExit as e:\n    code = e.code\n"
                        "sys.stderr.write('\\ntorch loaded: %s\\n' % ('torch' in sys.modules))\nsys.exit(code)\n")


def grade(kit: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``grade ARGS`` run in the copy, with the copy's own kit (as its instructor would); its last line on standard
    error says whether it loaded torch."""
    return subprocess.run([sys.executable, "-c", SAYS_IF_TORCH_LOADED, *args], cwd=kit, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.unit
def test_the_kit_ships_what_it_grades():
    """The repository's own public cases were recorded from its solutions, suites and course.yml (grade assign ran)."""
    assert recorded_from.refusal(ROOT / "course.yml", folder=public_cases.HERE) is None
    assert recorded_from.recorded(public_cases.HERE) == recorded_from.sources(ROOT / "course.yml")


@pytest.mark.unit
def test_the_digest_follows_what_the_cases_depend_on(tmp_path):
    kit = copy_kit(tmp_path / "kit")
    course = kit / "course.yml"
    before = recorded_from.sources(course)
    assert before == recorded_from.sources(ROOT / "course.yml")  # a copy elsewhere: the same sources
    text = course.read_text()
    course.write_text(text.replace("penalty_per_day: 10 ", "penalty_per_day: 20 ", 1))  # no public case depends on it
    assert recorded_from.sources(course) == before
    course.write_text(text.replace("  step_seconds: 20 ", "  step_seconds: 6 ", 1))  # grade check's limits do
    assert recorded_from.sources(course)["course"] != before["course"]
    course.write_text(text)
    solution = kit / "solutions" / "simple_attention.py"
    solution.write_text(solution.read_text() + "\n# edited\n")
    now = recorded_from.sources(course)
    assert now["solutions"] != before["solutions"] and now["suites"] == before["suites"]
    why = recorded_from.refusal(course)
    assert "recorded before the last change to the solutions" in why and "grade assign" in why
    suite = kit / "autograder" / "unit" / "suites" / "test_simple_attention.py"
    suite.write_text(suite.read_text() + "\n")
    assert "the solutions and the hidden suites" in recorded_from.refusal(course)


def test_every_verb_that_ships_or_grades_refuses_stale_public_cases(tmp_path):
    kit = copy_kit(tmp_path / "kit")
    sample = ROOT / "samples" / "submissions" / "alice"
    # the control, each verb going ahead, is at the end, after grade assign (as copied, the copy's sources are the
    # repository's, whose recording is current: the two tests above)
    # a change to a solution after the last grade assign (a comment is enough: the digest cannot tell)
    solution = kit / "solutions" / "causal_attention.py"
    solution.write_text(solution.read_text() + "\n# a clearer comment\n")
    for args, what in (
            (("release", "--out", str(tmp_path / "dist" / "bundle")), tmp_path / "dist" / "bundle"),
            (("gradescope", "--out", str(tmp_path / "autograder.zip")), tmp_path / "autograder.zip"),
            (("nbgrader", "--course-dir", str(tmp_path / "course")), tmp_path / "course" / "source"),
            (("autograde", str(sample), "--out", str(tmp_path / "results")), tmp_path / "results" / "alice")):
        run = grade(kit, *args)
        assert run.returncode == 2, (args, run.stdout, run.stderr)
        # said at once: before torch loads (and, for grade autograde, before its zygote starts)
        assert run.stderr.splitlines()[-1] == "torch loaded: False", (args, run.stderr)
        line = [said for said in run.stderr.splitlines() if said][-2]
        assert line.startswith("error: the public checks in ") and "run `grade assign`" in line, line
        assert "the solutions" in line and "Traceback" not in run.stderr
        assert not what.exists(), what  # nothing written, nothing graded
    # grade assign records them again: each goes ahead
    assigned = grade(kit, "assign")
    assert assigned.returncode == 0, assigned.stderr
    release = grade(kit, "release", "--out", str(tmp_path / "dist" / "bundle"))
    # it goes ahead and loads torch (to write the notebooks' literals): the control of the refusals' "False"
    assert release.returncode == 0 and release.stderr.splitlines()[-1] == "torch loaded: True", release.stderr
    assert recorded_from.recorded(tmp_path / "dist" / "bundle" / "autograder" / "check") == \
        recorded_from.sources(kit / "course.yml")
    graded = grade(kit, "autograde", str(sample), "--out", str(tmp_path / "results"))
    assert graded.returncode == 0, graded.stderr
