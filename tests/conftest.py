"""Shared fixtures: the repo's paths, and a helper that runs the ``grade`` CLI as a user would; each test's speed
marker from its folder.

The folders are the levels: ``unit/`` (fast, in-process: ``pytest -m unit`` runs them alone),
``integration/`` (the grader in one piece: its CLI, sandbox and workers) and ``system/`` (the real components:
nbgrader, Jupyter, Chromium, Dask, an LMS, a Debian root, the bundle). A test in ``unit/`` is ``unit``; one in the
other two is ``slow`` unless it says ``unit`` itself (an in-process check of that module's own helpers, run in the
unit run). A ``slow`` test in ``unit/`` is refused: it belongs a level up."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# nbformat as the kit loads it, before any test module or nbclient does: without jsonschema's IRI grammars (1.2 CPU-s
# in each of the run's pytest processes: autograder/nbgrader_course/notebook_format.py)
from autograder.nbgrader_course import notebook_format  # noqa: F401 - loaded for its effect, first
from tests.support.browser import Browser, find_or_install
from tests.support.warm_grade import WarmGrade

pytest_plugins = ["tests.support.two_workers",  # how the slow stage is shared between the xdist workers
                  "tests.support.cpu_time",  # the CPU each step spends, printed beside --durations
                  "tests.support.built_for_the_run"]  # what many tests read, built once per run

# ``grade check`` leaves a warm server behind (autograder/check/warm_server.py); each test's checks run in-process
# unless it asks for one (tests/test_check_server.py)
os.environ.setdefault("GRADE_CHECK_SERVER", "0")
# pip installs into the tests' fresh environments (the bundle on two Pythons, a fresh clone's `make demo` as a normal
# user, Gradescope's setup.sh in a Debian root, the documented commands) without byte-compiling what it installs:
# torch's 5,400 modules are 21 of the 28 CPU-s of its install, and a test imports a few hundred of them
os.environ.setdefault("PIP_COMPILE", "0")  # pip --no-compile (PIP_NO_COMPILE=1 would mean the opposite)
# the reference answers a run keeps for the next (grading/suites/stored_answers.py): in a folder of this test session's
# own, not the user's cache folder, so every run of the suite starts with none kept and computes them once
if "GRADE_CACHE_DIR" not in os.environ:
    os.environ["GRADE_CACHE_DIR"] = tempfile.mkdtemp(prefix="grade-test-cache-")
    atexit.register(shutil.rmtree, os.environ["GRADE_CACHE_DIR"], True)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "submissions"
MANIFEST = json.loads((ROOT / "tests" / "corpus" / "manifest.json").read_text())


def run_grade(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float = 900,
              fresh: bool = False) -> subprocess.CompletedProcess:
    """Run ``grade ARGS`` as ``python -m autograder.cli ARGS`` in ``cwd``: forked from this test process's warm
    server (tests/support/warm_grade.py: torch imported once, not once per command), or, with ``fresh`` (or where
    the fork cannot stand for it), in a fresh interpreter as a user's shell would start it."""
    full_env = {**os.environ, **(env or {})}
    # a `grade check` that may leave its warm server leaves a fork of itself, which tests find by its command line
    leaves_a_server = args[:1] == ("check",) and full_env.get("GRADE_CHECK_SERVER", "1") != "0"
    if not fresh and not leaves_a_server and not os.environ.get("GRADE_TESTS_FRESH"):
        done = _WARM.run(list(args), Path(cwd), full_env, timeout)
        if done is not None:
            return done
    return subprocess.run([sys.executable, "-m", "autograder.cli", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


_WARM = WarmGrade()


LEVELS = {"unit": "unit", "integration": "slow", "system": "slow"}


def pytest_collection_modifyitems(config, items):
    """Each test gets its speed marker from its folder (module docstring); one that says the other speed is kept if it
    is ``unit`` (a fast test beside slower ones), refused if it is ``slow`` in ``unit/``."""
    tests = Path(__file__).resolve().parent
    misplaced = []
    for item in items:
        try:
            level = Path(str(item.path)).resolve().relative_to(tests).parts[0]
        except ValueError:
            continue
        if level not in LEVELS:
            misplaced.append(f"{item.nodeid}: not in one of tests/{{{','.join(LEVELS)}}}/")
            continue
        said = {m.name for m in item.iter_markers() if m.name in ("unit", "slow")}
        if level == "unit" and "slow" in said:
            misplaced.append(f"{item.nodeid}: marked slow in tests/unit/")
        elif not said:
            item.add_marker(getattr(pytest.mark, LEVELS[level]))
    if misplaced:
        raise pytest.UsageError("tests at the wrong level:\n  " + "\n  ".join(misplaced))


@pytest.fixture(autouse=True)
def dev_null_stays_a_device():
    """A test (or the kit) that renames a file over /dev/null breaks every later ``>/dev/null`` on the machine,
    mmdebstrap's among them, far from the cause; this names the test that did it (autograder/outputs/atomic_file.py)."""
    yield
    if os.name == "posix":
        assert stat.S_ISCHR(os.stat(os.devnull).st_mode), "this test replaced /dev/null with a regular file"


@pytest.fixture
def scratch_dir() -> Path:
    """A temporary folder with a short path, for a test that points TMPDIR at a folder of its own: a Unix socket's
    path (multiprocessing makes some inside TMPDIR) holds at most 107 bytes, and ``tmp_path`` under an xdist
    worker (``/tmp/pytest-of-root/pytest-N/popen-gw1/<test name>0/``) leaves too few of them. Removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="ag-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def browser():
    """A real headless Chromium (Debian's package, installed here if missing); see tests/support/browser.py."""
    executable, why = find_or_install()
    if executable is None:
        pytest.skip(f"no headless Chromium: {why}")
    try:
        import playwright  # noqa: F401, PLC0415 - optional: the test extra's browser driver
    except ImportError:
        pytest.skip("playwright is not installed: pip install -e '.[test]'")
    chromium = Browser(executable)
    yield chromium
    chromium.close()
