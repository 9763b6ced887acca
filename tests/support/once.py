"""Something built once per test run and read by many tests: a graded class, the release bundle, the Gradescope zip.

``built_once(tmp_path_factory, name, build)`` calls ``build(folder)`` in a folder of the run's own and returns the
folder and what ``build`` returned (JSON: a command's exit status and output, say). With pytest-xdist the workers
share the run's temporary folder: the first to ask builds under a lock, the others wait for it and read the same
folder, so a run builds each thing once whatever the number of workers (tests/support/two_workers.py). A build that
raises is not kept: the next test to ask builds again, and fails the same way, with its own traceback.

Only for tests that read what was built: a test that changes it (regrades into it, edits a file) builds its own.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's temporary folder: each xdist worker's basetemp is a folder inside it (``popen-gw0``)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], object]) -> tuple[Path, object]:
    base = run_folder(tmp_path_factory)
    folder, record = base / name, base / f"{name}.built.json"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed, by this process or its end
        if record.exists():
            return folder, json.loads(record.read_text())
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        made = build(folder)
        record.write_text(json.dumps(made))
        return folder, made
