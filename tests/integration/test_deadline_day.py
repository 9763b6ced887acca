"""The "deadline day" issue's smaller items, each beside a control that shows the test can fail.

- `.gitignore` holds what the documented commands write that must never be committed: `dist/`, and the
  Gradescope zip, which holds the solutions and the hidden suites;
- `grade check` run inside `exercises/` checks that folder; `--step` takes a step's name alone when it is
  unique, and lists the candidates when it is not; `grade --version`;
- `grade check --html` never writes the page among the exercise files a student hands in;
- `grade export` names undated submissions once;
- `grade release` makes the bundle folder as any other folder (umask), not 0700;
- `grade nbgrader --course-dir`, and the record that lets the nbgrader course folder find its course.yml;
- `make demo` says what each stage does, and pip shows its progress on a terminal.
"""
from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from autograder import __version__
from autograder.check.steps import known_steps
from autograder.check import checking as check_verb
from autograder.commands import course_location
from autograder.usage import UsageError
from autograder.release.pins import installed_closure, python_range
from autograder.release.student_code import student_cli
from autograder.release.student_files import STUDENT_ROOTS

from .conftest import ROOT, run_grade
from .test_export import COURSE, ROSTER, results_json


def _ignored(path: str) -> bool:
    """Whether the repository's .gitignore ignores ``path`` (tracked or not: --no-index)."""
    run = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=ROOT, capture_output=True)
    assert run.returncode in (0, 1), run.stderr
    return run.returncode == 0


# -- .gitignore ----------------------------------------------------------------------------------------
@pytest.mark.unit
def test_gitignore_keeps_the_bundle_and_the_gradescope_zip_out_of_git():
    for path in ("dist/attention-exercises.zip", "dist/attention-exercises/README.md", "autograder.zip",
                 "elsewhere/autograder.zip", "results/alice/results.json", "similarity/similarity.json",
                 "grades.csv", "canvas-grades.csv", "moodle-grades.csv"):
        assert _ignored(path), path
    # the control: what belongs in the repository is not ignored
    for path in ("course.yml", "exercises/simple_attention.py", "solutions/simple_attention.py",
                 "autograder/gradescope/__init__.py", "samples/submissions/alice/simple_attention.py"):
        assert not _ignored(path), path


# -- grade check ---------------------------------------------------------------------------------------
@pytest.fixture
def exercises(tmp_path) -> Path:
    folder = tmp_path / "bundle" / "exercises"
    shutil.copytree(ROOT / "exercises", folder)
    return folder


def test_grade_check_inside_exercises_checks_this_folder(exercises):
    run = run_grade("check", "--json", "--step", "simple_attention", cwd=exercises, timeout=300)
    assert run.returncode == 1, run.stderr  # the stubs: checked, and not attempted
    data = json.loads(run.stdout)
    assert {s["status"] for s in data["steps"]} == {"not attempted"} and data["steps"]
    assert "checking this folder" in run.stderr
    # the control: a folder without the exercise files is still an error that says so
    empty = exercises.parent / "empty"
    empty.mkdir()
    run = run_grade("check", cwd=empty, timeout=120)
    assert run.returncode == 2 and "no such folder" in run.stderr


@pytest.mark.unit
def test_step_takes_a_unique_short_name_and_lists_the_candidates_of_an_ambiguous_one():
    from autograder.check import public_cases  # noqa: PLC0415 - imported on first use: torch is slow to load

    data = public_cases.load()
    assert known_steps(("CausalAttention",), data) == ("causal_attention.CausalAttention",)
    assert known_steps(("causal_attention", "simple_attention.context_vector"), data) == (
        "causal_attention", "simple_attention.context_vector")  # full names and modules, as before
    with pytest.raises(UsageError) as ambiguous:
        known_steps(("context_vector",), data)
    assert "simple_attention.context_vector" in str(ambiguous.value)
    assert "trainable_attention.context_vector" in str(ambiguous.value)
    with pytest.raises(UsageError, match="no such step or module"):  # the control: unknown stays unknown
        known_steps(("CausalAtention",), data)


def test_step_by_short_name_on_the_command_line(exercises):
    run = run_grade("check", str(exercises), "--step", "CausalAttention", timeout=300)
    assert run.returncode == 1, run.stderr
    rows = [line.split()[0] for line in run.stdout.splitlines() if line.startswith(("causal_", "simple_", "multi"))]
    assert rows == ["causal_attention.CausalAttention"], run.stdout
    run = run_grade("check", str(exercises), "--step", "context_vector", timeout=120)
    assert run.returncode == 2 and "--step trainable_attention.context_vector" in run.stderr


@pytest.mark.unit
def test_grade_version_is_the_package_version():
    run = run_grade("--version", timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"grade (attention autograder) {__version__}"
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == __version__
    # the student's grade has it too (its cli.py is cut from this one)

    student = student_cli((ROOT / "autograder" / "cli.py").read_text())
    assert "def _version(" in student and "version_option" in student


# -- grade check --html ----------------------------------------------------------------------------------
def test_the_feedback_page_is_never_written_among_the_exercises(exercises):
    bundle = exercises.parent
    inside = run_grade("check", "--step", "CausalAttention", "--html", cwd=exercises, timeout=300)
    assert inside.returncode == 1, inside.stderr
    assert not (exercises / "feedback.html").exists()
    assert (bundle / "feedback.html").is_file() and f"feedback page: {bundle / 'feedback.html'}" in inside.stdout
    (bundle / "feedback.html").unlink()
    # from the bundle's folder, as documented: ./feedback.html
    beside = run_grade("check", "--step", "CausalAttention", "--html", cwd=bundle, timeout=300)
    assert (bundle / "feedback.html").is_file() and not (exercises / "feedback.html").exists(), beside.stderr
    # the control: a FILE named explicitly is written where asked, with a warning when it is among the exercises
    asked = run_grade("check", "--step", "CausalAttention", "--html", "exercises/page.html", cwd=bundle, timeout=300)
    assert (exercises / "page.html").is_file() and "do not hand it in" in asked.stderr


@pytest.mark.unit
def test_page_path_rule(tmp_path, monkeypatch):
    folder = tmp_path / "exercises"
    (folder / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert check_verb.page_path(Path("exercises"), True) == tmp_path / "feedback.html"
    monkeypatch.chdir(folder / "sub")
    assert check_verb.page_path(Path(".."), True) == tmp_path / "feedback.html"
    assert check_verb.page_path(Path(".."), Path("mine.html")) == Path("mine.html")


# -- grade export --------------------------------------------------------------------------------------
def test_export_names_an_undated_submission_once(tmp_path):
    for name, text in {"erin": results_json(7.5, None, dated=False),
                       "bob": results_json(8, "2025-03-16T11:59:00+01:00")}.items():
        (tmp_path / "results" / name).mkdir(parents=True)
        (tmp_path / "results" / name / "results.json").write_text(text)
    (tmp_path / "roster.csv").write_text(ROSTER)
    (tmp_path / "course.yml").write_text(COURSE)
    run = run_grade("export", "--results", "results", "--roster", "roster.csv", "--format", "csv", "--out",
                    "grades.csv", cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    assert sum("Eddy, Erin" in line for line in run.stderr.splitlines()) == 1, run.stderr
    line = next(line for line in run.stderr.splitlines() if "Eddy, Erin" in line)
    assert "undated" in line and "counted on time" in line and "--times" in line
    assert "1 undated" in run.stderr  # still counted in the summary line
    # the control: a late student is reported (once, with the penalty)
    assert sum("Bee, Bob" in line for line in run.stderr.splitlines()) == 1 and "-20%" in run.stderr


# -- grade release -------------------------------------------------------------------------------------
@pytest.mark.parametrize("umask, mode", [(0o022, 0o755), (0o077, 0o700)])
def test_the_bundle_folder_follows_the_umask(tmp_path, umask, mode):
    """0o022 gives 0755 (the bug was 0700 whatever the umask); 0o077 gives 0700: the umask decides."""
    code = ("import os, sys; from pathlib import Path; from autograder.release.bundle import build_release\n"
            f"os.umask({umask}); out = Path(sys.argv[1]); build_release(out, Path(sys.argv[2]))\n"
            "print(oct(out.stat().st_mode & 0o777), oct((out / 'exercises').stat().st_mode & 0o777))")
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path / "dist" / "bundle"), str(ROOT / "course.yml")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [oct(mode), oct(mode)]


# -- grade nbgrader: one meaning per option name, and the record ---------------------------------------
def test_grade_nbgrader_course_names_course_yml_as_everywhere(tmp_path):
    old = run_grade("nbgrader", "--course", str(tmp_path), timeout=120)
    assert old.returncode == 2
    assert "--course names the course definition file" in old.stderr and f"--course-dir {tmp_path}" in old.stderr
    missing = run_grade("nbgrader", timeout=120)
    assert missing.returncode == 2 and "--course-dir" in missing.stderr
    # the same folder mistake on another verb says where course.yml is
    run = run_grade("export", "--results", "r", "--roster", "x.csv", "--format", "csv", "--course", str(ROOT),
                    timeout=120)
    assert run.returncode == 2 and f"did you mean --course {ROOT / 'course.yml'}" in run.stderr


@pytest.mark.unit
def test_the_course_record_is_found_from_the_course_folder(tmp_path, monkeypatch):
    course_dir = tmp_path / "attention-course"
    course_dir.mkdir()
    record = course_location.write_record(course_dir, ROOT / "course.yml")
    assert record.name == ".attention-kit.yml" and str(ROOT / "course.yml") in record.read_text()
    monkeypatch.chdir(course_dir)
    assert course_location.resolve(Path("course.yml"), False)[0] == ROOT / "course.yml"
    assert course_location.resolve(Path("other.yml"), True) == (Path("other.yml"), None)  # --course wins
    monkeypatch.chdir(tmp_path)  # --nbgrader DIR's record, from elsewhere
    assert course_location.resolve(Path("course.yml"), False, nbgrader_dir=course_dir)[0] == ROOT / "course.yml"
    # the control: without a record, the error says which flag to use
    with pytest.raises(UsageError, match="pass --course PATH/TO/course.yml"):
        course_location.resolve(Path("course.yml"), False)
    (course_dir / ".attention-kit.yml").write_text("course: /nowhere/course.yml\n")
    with pytest.raises(UsageError, match="has the kit moved"):
        course_location.resolve(Path("course.yml"), False, nbgrader_dir=course_dir)


def test_autograde_from_the_course_folder_uses_the_recorded_course(tmp_path):
    """Past the course: the run gets as far as the submissions (none here), not 'course.yml: file not found'."""
    course_dir = tmp_path / "attention-course"
    (course_dir / "submitted").mkdir(parents=True)
    control = run_grade("autograde", "--nbgrader", ".", "--out", "results", cwd=course_dir, timeout=300)
    assert control.returncode == 2 and "pass --course PATH/TO/course.yml" in control.stderr
    course_location.write_record(course_dir, ROOT / "course.yml")
    run = run_grade("autograde", "--nbgrader", ".", "--out", "results", cwd=course_dir, timeout=300)
    assert "course.yml: file not found" not in run.stderr and "--course" not in run.stderr, run.stderr
    assert f"course: {ROOT / 'course.yml'}" in run.stderr


# -- make demo -----------------------------------------------------------------------------------------
FAKE_PYTHON = """#!/bin/sh
# stands in for python3.11: `-m venv DIR` makes DIR/bin/python and DIR/bin/grade, which log their arguments
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/sh\\necho "$(basename "$0") $*" >> "%s/calls.log"\\n' "$(pwd)" > "$3/bin/python"
  cp "$3/bin/python" "$3/bin/grade"
  chmod +x "$3/bin/python" "$3/bin/grade"
fi
"""


def _make(folder: Path, target: str, tty: bool) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(folder), "LANG": "C.UTF-8"}
    args = ["make", "--no-print-directory", target, f"PYTHON={folder / 'fake-python'}"]
    if not tty:
        return subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=60).stdout
    pid, fd = pty.fork()
    if pid == 0:  # the child: make on a terminal
        os.chdir(folder)
        os.execvpe("make", args, env)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.unit
@pytest.mark.parametrize("tty", [False, True])
def test_make_demo_says_each_stage_and_pip_is_quiet_only_off_a_terminal(tmp_path, tty):
    shutil.copyfile(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copyfile(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "fake-python").write_text(FAKE_PYTHON)
    (tmp_path / "fake-python").chmod(0o755)
    out = _make(tmp_path, "demo", tty)
    lines = out.splitlines()
    assert any(re.match(r"installing .* into \.venv \(first run: (about \d+ minutes|under a minute)\)\.\.\.$", line)
               for line in lines), out
    assert any(re.match(r"grading the \d+ sample submissions .* into results/ \(about \d+ s.*\)\.\.\.$", line)
               for line in lines), out
    calls = (tmp_path / "calls.log").read_text().splitlines()
    pip = next(call for call in calls if " pip install " in call)
    assert ("--quiet" in pip) is (not tty), pip  # pip's progress on a terminal, quiet in a log
    assert "[test]" not in pip, pip  # the kit alone: the test tools are make test's
    assert "grade autograde samples/submissions --out results" in calls
    # a second run installs nothing and says nothing about installing (the control: the stage line is the stage's)
    again = _make(tmp_path, "demo", tty)
    assert "installing" not in again and "grading the" in again
    assert sum(" pip install " in c for c in (tmp_path / "calls.log").read_text().splitlines()) == 1


@pytest.mark.unit
def test_the_bundle_python_range_is_what_the_pins_allow():
    pins = installed_closure(STUDENT_ROOTS)
    assert python_range(pins) == ">=3.11"  # numpy 2.4.6 and contourpy 1.3.3: Requires-Python >=3.11
    with pytest.raises(LookupError, match="not 3.10"):  # the control: a Python below the pins' floor
        python_range(pins, (3, 10))
