"""Costs a user waits for outside any grading: the interpreter's last garbage collections at exit (every object
torch made, walked once more), the teardown of a `grade check` that has printed its results, and the Lark grammars
jsonschema compiles when nbgrader is imported."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
    """`grade autograde --nbgrader` imports nbgrader's API without compiling rfc3987_syntax's grammars, and
    leaves the module importable afterwards; control: nbgrader's own import compiles them."""
    ran = _python("import sys\n"
                  "from autograder.nbgrader_course.nbgrader_api import import_nbgrader_api\n"
                  "api = import_nbgrader_api()\n"
                  "print('gradebook:', hasattr(api, 'Gradebook'))\n"
                  "print('grammars loaded:', 'rfc3987_syntax' in sys.modules)\n"
                  "import rfc3987_syntax\n"
                  "print('importable after:', rfc3987_syntax.is_valid_syntax('iri', 'https://example.org/'))\n")
    assert "gradebook: True" in ran
    assert "grammars loaded: False" in ran
    assert "importable after: True" in ran
    control = _python("import sys\nimport nbgrader.api\nprint('grammars loaded:', 'rfc3987_syntax' in sys.modules)\n")
    assert "grammars loaded: True" in control
