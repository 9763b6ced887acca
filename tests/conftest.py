"""Shared fixtures: the repo's paths, and a helper that runs the ``grade`` CLI as a user would."""
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

from tests.browser import Browser, find_or_install

# ``grade check`` leaves a warm server behind (autograder/check/warm_server.py); each test's checks run in-process
# unless it asks for one (tests/test_check_server.py)
os.environ.setdefault("GRADE_CHECK_SERVER", "0")
# the reference answers a run keeps for the next (grading/suites/stored_answers.py): in a folder of this test session's
# own, not the user's cache folder, so every run of the suite starts with none kept and computes them once
if "GRADE_CACHE_DIR" not in os.environ:
    os.environ["GRADE_CACHE_DIR"] = tempfile.mkdtemp(prefix="grade-test-cache-")
    atexit.register(shutil.rmtree, os.environ["GRADE_CACHE_DIR"], True)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "submissions"
MANIFEST = json.loads((ROOT / "tests" / "corpus" / "manifest.json").read_text())


def run_grade(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run ``grade ARGS`` in a fresh interpreter, as a user's shell would."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "autograder.cli", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(autouse=True)
def dev_null_stays_a_device():
    """A test (or the kit) that renames a file over /dev/null breaks every later ``>/dev/null`` on the machine,
    mmdebstrap's among them, far from the cause; this names the test that did it (autograder/outputs/atomic_file.py)."""
    yield
    if os.name == "posix":
        assert stat.S_ISCHR(os.stat(os.devnull).st_mode), "this test replaced /dev/null with a regular file"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def browser():
    """A real headless Chromium (Debian's package, installed here if missing); see tests/browser.py."""
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
