"""Costs a user waits for outside any grading: the interpreter's last garbage collections at exit (every object
torch made, walked once more), the teardown of a `grade check` that has printed its results, the collector's full
passes while torch and the course load, the Lark grammars jsonschema compiles and the server extensions nbgrader loads
when nbgrader is imported."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, run_grade


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


# A check run as the command line runs it (``command_line``: the console script's) or as a caller runs it (``main``: a
# CliRunner, a script), with an exit hook of its own.
CHECK = ("import atexit, sys\n"
         "atexit.register(lambda: print('EXIT HOOKS RAN', flush=True))\n"
         "sys.argv = ['grade', 'check', {folder!r}, '--step', 'simple_attention', '--json']\n"
         "from autograder import cli\n"
         "cli.{entry}()\n")


def _check(folder: str, entry: str) -> subprocess.CompletedProcess:
    # checked in this process (no warm server left behind); -v: the interpreter's teardown says "# cleanup ..."
    env = {**os.environ, "GRADE_CHECK_SERVER": "0", "PYTHONVERBOSE": "1"}
    return subprocess.run([sys.executable, "-c", CHECK.format(folder=folder, entry=entry)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _torn_down(done: subprocess.CompletedProcess) -> bool:
    return "# cleanup" in done.stderr


def _results(done: subprocess.CompletedProcess) -> dict:
    return json.loads(done.stdout.split("EXIT HOOKS RAN")[0])


def test_grade_check_ends_without_the_teardown_once_its_output_is_out():
    """The command line's `grade check` ends as soon as its results are printed (the interpreter's teardown, with
    torch loaded, was 0.15-0.3 s of every cold check): the exit hooks still run, the JSON on a pipe is whole, the
    exit status is the check's; control: the same check called through `main` (a CliRunner, a script) is torn down."""
    quick = _check("samples/submissions/alice", "command_line")
    assert quick.returncode == 0, quick.stderr[-2000:]
    assert "EXIT HOOKS RAN" in quick.stdout and not _torn_down(quick)
    control = _check("samples/submissions/alice", "main")
    assert control.returncode == 0, control.stderr[-2000:]
    assert "EXIT HOOKS RAN" in control.stdout and _torn_down(control)
    assert _results(quick) == _results(control)
    failing = _check("samples/submissions/dave", "command_line")  # dave's steps are the untouched stubs: status 1
    assert failing.returncode == _check("samples/submissions/dave", "main").returncode == 1, failing.stderr[-2000:]
    assert not _torn_down(failing) and _results(failing)["score"] < _results(failing)["max_score"]


# A batch run as the command line runs it, or as a caller runs it, with a daemon thread of a library's still running
# (as tqdm's monitor can be), which its exit hook names.
AUTOGRADE = ("import atexit, sys, threading\n"
             "threading.Thread(target=threading.Event().wait, name='a library daemon', daemon=True).start()\n"
             "atexit.register(lambda: print('EXIT HOOKS RAN; daemons:', sorted(t.name for t in threading.enumerate() "
             "if t.daemon), flush=True))\n"
             "sys.argv = ['grade', 'autograde', 'samples/submissions', '--out', {out!r}, '--jobs', '1']\n"
             "from autograder import cli\n"
             "cli.{entry}()\n")


def _autograde(out: Path, entry: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONVERBOSE": "1"}
    return subprocess.run([sys.executable, "-c", AUTOGRADE.format(out=str(out), entry=entry)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def _graded(out: Path) -> dict:
    """Each submission's points and feedback, as results.json has them (not the times)."""
    return {path.parent.name: [(t["name"], t["score"], t["output"]) for t in json.loads(path.read_text())["tests"]]
            for path in sorted(out.glob("*/results.json"))}


def test_grade_autograde_ends_without_the_teardown_once_the_batch_is_written(tmp_path):
    """The command line's `grade autograde` ends once its summary is out, with a daemon thread (which the interpreter's
    teardown would not wait for either) still running: the exit hooks run, every results.json and the class summary
    are written, the status is the batch's; control: the same batch through `main` is torn down."""
    quick = _autograde(tmp_path / "quick", "command_line")
    assert quick.returncode == 0, quick.stderr[-2000:]
    # the library's daemon still runs when the exit hooks do (tqdm's monitor may or may not have ended by then: its
    # own exit hook tells it to stop, and when its thread gets the CPU to do so is the machine's affair)
    assert re.search(r"^EXIT HOOKS RAN; daemons: \[.*'a library daemon'.*\]$", quick.stdout, re.M), quick.stdout[-2000:]
    assert not _torn_down(quick)
    control = _autograde(tmp_path / "control", "main")
    assert control.returncode == 0, control.stderr[-2000:]
    assert "EXIT HOOKS RAN" in control.stdout and _torn_down(control)
    graded = _graded(tmp_path / "quick")
    assert len(graded) == len([p for p in (ROOT / "samples" / "submissions").iterdir() if p.is_dir()]) >= 4
    assert graded == _graded(tmp_path / "control")
    summary = (tmp_path / "quick" / "summary.md").read_text()
    assert all(f"[feedback.html]({name}/feedback.html)" in summary for name in graded)


THREADS = ("import threading\n"
           "from autograder import quick_exit\n"
           "release = threading.Event()\n"
           "threading.Thread(target=release.wait, daemon=True).start()\n"
           "print('daemon:', quick_exit.allowed(quick_exit.COMMAND_LINE), quick_exit.allowed(None))\n"
           "worker = threading.Thread(target=release.wait)\n"
           "worker.start()\n"
           "print('and another:', quick_exit.allowed(quick_exit.COMMAND_LINE))\n"
           "release.set()\n")


def test_a_thread_the_teardown_would_wait_for_keeps_the_process_from_ending_at_once():
    """A daemon thread does not keep the command line's process from ending at once; any other thread does (the
    interpreter would wait for it); a process that did not start through the command line never ends at once.
    (In a process of its own: the test run's own threads are not the point.)"""
    ran = _python(THREADS)
    assert "daemon: True False" in ran and "and another: False" in ran


# An atexit hook registered before the command runs is called after the command's own hooks (last in, first out):
# it sees what the interpreter's finalisation will find.
AT_EXIT = ("import atexit, gc, sys\n"
           "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n"
           "from autograder import cli\n"
           "{run}\n")


def test_a_command_exits_with_its_objects_frozen():
    """`grade`'s commands leave the interpreter nothing to collect at exit (0.25 s of a cold `grade check`, 1 s of
    a batch); control: the same hook without the command sees nothing frozen."""
    ran = _python(AT_EXIT.format(run="try:\n    cli._run(lambda: 0)\nexcept SystemExit:\n    pass"))
    assert "frozen at exit: True" in ran
    control = _python(AT_EXIT.format(run="pass"))
    assert "frozen at exit: False" in control


@pytest.mark.skipif(importlib.util.find_spec("nbgrader") is None or importlib.util.find_spec("rfc3987_syntax") is None,
                    reason="needs nbgrader, and jsonschema's non-GPL format checkers (the test extra has both)")
def test_the_kit_imports_nbgrader_without_the_iri_grammars():
    """`grade autograde --nbgrader` imports nbgrader's API without compiling rfc3987_syntax's grammars, nor loading
    nbgrader's Jupyter server extensions, and leaves both importable afterwards: the package is whole again as soon
    as a name of its own is asked for. Control: nbgrader's own import loads both."""
    ran = _python("import sys\n"
                  "from autograder.nbgrader_course.nbgrader_api import import_nbgrader_api\n"
                  "api = import_nbgrader_api()\n"
                  "print('gradebook:', hasattr(api, 'Gradebook'))\n"
                  "print('grammars loaded:', 'rfc3987_syntax' in sys.modules)\n"
                  "print('extensions loaded:', 'nbgrader.server_extensions.formgrader' in sys.modules)\n"
                  "from nbgrader.utils import parse_utc\n"
                  "print('still not:', 'nbgrader.server_extensions.formgrader' in sys.modules)\n"
                  "import importlib.metadata, nbgrader\n"
                  "print('whole after:', nbgrader.__version__ == importlib.metadata.version('nbgrader'),\n"
                  "      hasattr(nbgrader.server_extensions.formgrader, 'load_jupyter_server_extension'),\n"
                  "      nbgrader._jupyter_server_extension_points() == [{'module': 'nbgrader'}], "
                  "nbgrader.api is api)\n"
                  "import rfc3987_syntax\n"
                  "print('importable after:', rfc3987_syntax.is_valid_syntax('iri', 'https://example.org/'))\n")
    assert "gradebook: True" in ran
    assert "grammars loaded: False" in ran
    assert "extensions loaded: False" in ran and "still not: False" in ran
    assert "whole after: True True True True" in ran
    assert "importable after: True" in ran
    control = _python("import sys\nimport nbgrader.api\nprint('grammars loaded:', 'rfc3987_syntax' in sys.modules)\n"
                      "print('extensions loaded:', 'nbgrader.server_extensions.formgrader' in sys.modules)\n")
    assert "grammars loaded: True" in control and "extensions loaded: True" in control


@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None,
                    reason="needs jsonschema's non-GPL format checkers (the test extra has them)")
def test_the_kits_notebook_writers_load_nbformat_without_the_iri_grammars():
    """The modules that write notebooks for `grade nbgrader`, `grade release` and `grade autograde --nbgrader` load
    nbformat without compiling rfc3987_syntax's grammars (autograder/nbgrader_course/notebook_format.py), and
    nbformat validates a notebook all the same. Control: nbformat's own import compiles them."""
    ran = _python("import sys\n"
                  "from autograder.release import student_notebooks\n"
                  "from autograder.nbgrader_course import autograded, course_dir, nbgrader_cells, notebooks\n"
                  "import nbformat\n"
                  "nbformat.validate(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('x = 1')]))\n"
                  "print('grammars loaded:', sys.modules.get('rfc3987_syntax') is not None)\n")
    assert "grammars loaded: False" in ran
    control = _python("import sys\nimport nbformat\nprint('grammars loaded:', 'rfc3987_syntax' in sys.modules)\n")
    assert "grammars loaded: True" in control


# Each full pass of the collector, written down by every process of the command that runs this (the batch's jobs are
# forked from it): "walked torch" when torch was (being) loaded and nothing was frozen yet, so the pass walked all of
# it.
FULL_PASSES = ("import gc, os, sys\n"
               "def note(phase, info):\n"
               "    if phase == 'start' and info['generation'] == 2:\n"
               "        walked = 'torch' in sys.modules and gc.get_freeze_count() == 0\n"
               "        with open(os.path.join({log!r}, str(os.getpid())), 'a') as f:\n"
               "            f.write('walked torch\\n' if walked else 'walked what was new\\n')\n"
               "gc.callbacks.append(note)\n"
               "{patch}\n"
               "sys.argv = ['grade', *{argv!r}]\n"
               "from autograder import cli\n"
               "cli.main()\n")
NO_PAUSE = "import contextlib, autograder.long_lived as long_lived\nlong_lived.loading = contextlib.nullcontext"


def _full_passes(tmp_path: Path, name: str, argv: list[str], patch: str = "") -> list[str]:
    log = tmp_path / name
    log.mkdir()
    code = FULL_PASSES.format(log=str(log), patch=patch, argv=argv)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "GRADE_CHECK_SERVER": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for f in sorted(log.iterdir()) for line in f.read_text().splitlines()]


def test_loading_torch_and_the_course_sets_off_no_full_collection(tmp_path):
    """A check and a batch load torch, the course and the public cases with the collector paused, then freeze them
    (`autograder/long_lived.py`): no full pass of the collector walks torch's 200,000 objects (15-60 ms each) on
    the way to the first submission, nor in a batch job while it grades. Control: the same commands loading with
    the collector running make such passes."""
    check = ["check", "samples/submissions/alice", "--step", "simple_attention"]
    batch = ["autograde", "samples/submissions", "--out", str(tmp_path / "results"), "--jobs", "2"]
    assert "walked torch" not in _full_passes(tmp_path, "check", check)
    assert "walked torch" not in _full_passes(tmp_path, "batch", batch)
    assert "walked torch" in _full_passes(tmp_path, "check-control", check, NO_PAUSE)
    assert "walked torch" in _full_passes(tmp_path, "batch-control", [*batch[:3], str(tmp_path / "again"), *batch[4:]],
                                          NO_PAUSE)


def test_student_code_runs_with_the_collector_on(tmp_path):
    """The zygote loads torch with the collector paused (`sandbox/zygote.py`'s boot); the workers forked from it, where
    student code runs, have it on, as in the student's own Python. Control: the same code asking for it off fails."""
    subs = tmp_path / "subs"
    for name, wanted in (("on", "gc.isenabled()"), ("off", "not gc.isenabled()")):
        shutil.copytree(ROOT / "samples" / "submissions" / "alice", subs / name)
        module = subs / name / "simple_attention.py"
        text = module.read_text()
        module.write_text(text.replace("import torch\n", "import gc\nimport torch\n", 1).replace(
            "def attention_scores(inputs, query):\n",
            f"def attention_scores(inputs, query):\n    assert {wanted}, 'the collector is not as asked'\n", 1))
    out = tmp_path / "results"
    # forked from the tests' warm server: the zygote is a process of its own (sandbox/zygote.py), started as a
    # user's `grade autograde` starts it, so the caller's collector is not the workers'
    done = run_grade("autograde", str(subs), "--out", str(out), "--jobs", "1", timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]

    def scores_passed(name: str) -> bool:
        tests = json.loads((out / name / "results.json").read_text())["tests"]
        return all(t["score"] == t["max_score"] for t in tests
                   if t["name"].startswith("simple_attention.attention_scores"))

    assert scores_passed("on")
    assert not scores_passed("off")


def test_without_nbgrader_the_results_stay_and_the_gradebook_is_said_not_updated(tmp_path):
    """Where nbgrader cannot be imported, `grade autograde --nbgrader` says the gradebook was not updated and writes no
    feedback notebooks, instead of failing the run after grading. Control: the same call with nbgrader there goes on
    past that check (and fails on this empty list of students)."""
    code = ("import sys\n{absent}\nfrom pathlib import Path\nfrom autograder.autograde import pipeline\n"
            "try:\n    pipeline._to_nbgrader(Path({course!r}), [], Path({out!r}))\n"
            "except Exception as exc:\n    print('raised', type(exc).__name__)\n")
    absent = subprocess.run([sys.executable, "-c", code.format(absent="sys.modules['nbgrader'] = None",
                                                               course=str(tmp_path), out=str(tmp_path / "out"))],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "nbgrader is not installed here" in absent.stderr and "raised" not in absent.stdout
    assert not (tmp_path / "autograded").exists()
    if importlib.util.find_spec("nbgrader") is not None:
        there = subprocess.run([sys.executable, "-c", code.format(absent="", course=str(tmp_path),
                                                                  out=str(tmp_path / "out"))],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert "nbgrader is not installed here" not in there.stderr and "raised" in there.stdout
