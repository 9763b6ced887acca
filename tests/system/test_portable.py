"""`grade check` on a student's laptop: Linux, macOS, and Windows, where there is no fork, resource or fcntl.

Windows cannot be run here, so the test takes its POSIX-only parts away on Linux: a sitecustomize.py that
every Python process of the run imports (the `grade check` process and its workers) hides `resource` and
`fcntl` and deletes `os.fork`. The same submissions must then get the same rows, points and words.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.release.student_code import student_package

from .conftest import CORPUS, ROOT, run_grade

HIDE_POSIX = """import os, sys
sys.modules["resource"] = None  # import resource -> ImportError, as on Windows
sys.modules["fcntl"] = None
del os.fork
"""
SUBMISSIONS = ["correct_loops", "bug_no_scaling", "bug_mask_after_softmax_no_renorm", "stubs"]


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory):
    home = tmp_path_factory.mktemp("student")
    shutil.copytree(ROOT / "autograder", home / "autograder",
                    ignore=shutil.ignore_patterns("unit", "__pycache__", "assign"))
    shim = tmp_path_factory.mktemp("no-posix")
    (shim / "sitecustomize.py").write_text(HIDE_POSIX)
    return home, shim


def check(home, folder, shim=None):
    paths = [str(home)] + ([str(shim)] if shim else [])
    return run_grade("check", str(folder), "--json", cwd=home, env={"PYTHONPATH": os.pathsep.join(paths)}, timeout=600)


def test_the_shim_really_takes_fork_resource_and_fcntl_away(student_copy):
    home, shim = student_copy
    code = "import os\ntry:\n import resource\nexcept ImportError:\n print('no resource')\nprint(hasattr(os, 'fork'))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(shim)},
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["no", "resource", "False"], out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name", SUBMISSIONS)
def test_grade_check_without_posix_gives_the_same_results(student_copy, name):
    home, shim = student_copy
    normal, portable = check(home, CORPUS / name), check(home, CORPUS / name, shim)
    assert portable.returncode == normal.returncode, (portable.stdout[-3000:], portable.stderr[-2000:])
    a, b = json.loads(normal.stdout), json.loads(portable.stdout)
    a.pop("isolation", None), b.pop("isolation", None)
    differing = [(x["step"], [(c["count"], c["status"], c["feedback"][:2]) for c in x["counts"]],
                  [(c["count"], c["status"], c["feedback"][:2]) for c in y["counts"]])
                 for x, y in zip(a["steps"], b["steps"]) if x != y]
    assert a == b, differing  # each differing step's counts, with and without fork: what each said


def test_the_student_code_imports_nothing_posix_only_at_the_top():
    """grade check's modules import resource and fcntl only where they are used (never on its own path)."""
    for rel, path in student_package().items():
        if not rel.endswith(".py") or not hasattr(path, "read_text"):
            continue
        top = [n for n in ast.parse(path.read_text()).body if isinstance(n, (ast.Import, ast.ImportFrom))]
        names = {a.name for n in top for a in n.names} | {n.module for n in top if isinstance(n, ast.ImportFrom)}
        assert not names & {"resource", "fcntl", "pwd", "grp", "termios"}, (rel, names)


def test_the_student_code_compiles_on_other_pythons(tmp_path):
    """The bundle installs on any Python that torch 2.13.0 has wheels for: its code must not need 3.11."""
    folder = tmp_path / "autograder"
    for rel, path in student_package().items():
        if rel.endswith(".py"):
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(path if isinstance(path, bytes) else path.read_bytes())
    tried = []
    for version in ("3.10", "3.12", "3.13"):
        found = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python")) or [
            shutil.which(f"python{version}")]
        python = str(found[-1]) if found[-1] else None
        if python is None:
            continue
        out = subprocess.run([python, "-m", "compileall", "-q", str(folder)], capture_output=True, text=True,
                             timeout=120)
        if out.returncode == 127 or "command not found" in out.stderr or "not installed" in out.stderr:
            continue
        assert out.returncode == 0, (version, out.stdout[-2000:], out.stderr[-2000:])
        tried.append(version)
    if not tried:
        pytest.skip("no other Python version installed here")


#: the time limit of the one step these tests run, in the course their student copy has (``_short_limit``): a worker's
#: start-up longer than it, and a student's module whose import outlasts it, cost no more than this
STEP = "simple_attention.attention_scores"
STEP_SECONDS = 4

#: a spawned worker whose ``import torch`` takes longer than the step's whole time limit, as it can on a busy machine;
#: only in the workers, which alone carry the start-up token in their environment; it leaves a file when it sleeps,
#: so that the test knows the import it slows is one a worker makes
SLOW_TORCH = """
import os, sys, time
if "AUTOGRADER_WORKER_TOKEN" in os.environ:
    class _Slow:
        def find_spec(self, name, path=None, target=None):
            if name == "torch":
                sys.meta_path.remove(self)
                open({marker!r}, "w").close()
                time.sleep({seconds})
            return None
    sys.meta_path.insert(0, _Slow())
"""


def _slow_torch(tmp_path: Path, marker: Path) -> Path:
    shim = tmp_path / "slow-torch"
    shim.mkdir()
    slow = SLOW_TORCH.replace("{marker!r}", repr(str(marker))).replace("{seconds}", str(STEP_SECONDS + 2))
    (shim / "sitecustomize.py").write_text(HIDE_POSIX + slow)
    return shim


def _short_limit(home: Path, tmp_path: Path) -> Path:
    """A copy of the student's kit whose public cases give ``STEP`` a time limit of ``STEP_SECONDS`` (as grade assign
    records a course.yml's ``time_limit``), so that what outlasts it costs seconds, not the default 20."""
    copy = tmp_path / "student-short-limit"
    shutil.copytree(home / "autograder", copy / "autograder")
    cases = copy / "autograder" / "check" / "public_cases.json"
    data = json.loads(cases.read_text())
    data["steps"][STEP]["time_limit"] = float(STEP_SECONDS)
    cases.write_text(json.dumps(data))
    return copy


def _one_step(home: Path, shim: Path, folder: Path = CORPUS / "correct_loops") -> dict:
    run = run_grade("check", str(folder), "--step", STEP, "--json",
                    cwd=home, env={"PYTHONPATH": os.pathsep.join([str(home), str(shim)])}, timeout=600)
    return json.loads(run.stdout)["steps"][0]


@pytest.mark.slow
def test_a_worker_s_slow_start_is_not_counted_against_the_step(student_copy, tmp_path):
    """Without fork, each worker is a new process that imports torch (1.5 s on a quiet machine, 7 s and more on a busy
    one): that is the grader's start-up, not the student's time. The control: a student's module whose import runs
    longer than the step's time limit (its own code, at its top) is the step's, stopped by that limit and said as
    such, so the test can tell."""
    home, no_posix = student_copy
    home = _short_limit(home, tmp_path)
    slept = tmp_path / "torch-import-slept"
    step = _one_step(home, _slow_torch(tmp_path, slept))
    said = [(c["count"], c["status"], c["feedback"][:3]) for c in step["counts"]]
    assert slept.exists(), "the slow import of torch was never made by a worker"
    assert step["status"] == "passed" and step["points"] == step["max_points"], said  # what each count said
    slow = tmp_path / "slow_module"
    shutil.copytree(CORPUS / "correct_loops", slow)
    own = slow / "simple_attention.py"
    own.write_text("import time\ntime.sleep(600)\n" + own.read_text())
    control = _one_step(home, no_posix, slow)
    said = json.dumps(control)
    assert control["status"] != "passed" and f"the time limit of {STEP_SECONDS} s was hit" in said, control
    assert "simple_attention.py" in said, control  # the student's own module is named as what ran out of time


#: a spawned worker that ends before it connects, as one did on a loaded machine (this test file's own runs, under a
#: full suite): the first one of the run only (a marker file), or every one
DIES_AT_START = """
import os
if "AUTOGRADER_WORKER_TOKEN" in os.environ:
    _marker = {marker!r}
    if _marker is None or not os.path.exists(_marker):
        if _marker is not None:
            open(_marker, "w").close()
        os._exit(3)
"""


def _dying_shim(tmp_path: Path, marker: Path | None) -> Path:
    shim = tmp_path / ("dies-once" if marker else "dies-always")
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(HIDE_POSIX + DIES_AT_START.replace("{marker!r}",
                                                                              repr(marker and str(marker))))
    return shim


@pytest.mark.slow
def test_a_worker_that_ends_before_it_connects_is_started_again(student_copy, tmp_path):
    """Without fork, a worker that ends before it has connected (none of the student's code has run in it) is started
    once more: the step loses nothing to the grader's start-up (it lost a count, after a 120 s wait, before). The
    control: a worker that never starts is said as the grader's own failure, with how it ended."""
    home, _ = student_copy
    marker = tmp_path / "first-worker-ended"
    step = _one_step(home, _dying_shim(tmp_path, marker))
    said = [(c["count"], c["status"], c["feedback"][:3]) for c in step["counts"]]
    assert marker.exists() and step["status"] == "passed" and step["points"] == step["max_points"], said
    control = _one_step(home, _dying_shim(tmp_path, None))
    assert control["status"] != "passed"
    assert "the worker process did not start (it ended with exit code 3 before connecting; tried 2 times)" in \
        json.dumps(control), control
