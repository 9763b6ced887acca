"""``grade check --watch``: a save is checked again, by the same warm process, until Ctrl-C."""
from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from autograder.check import watch

from .conftest import ROOT
from tests.support.submission_forms import one_notebook

SAMPLES = ROOT / "samples" / "submissions"


class Watching:
    """``grade check --watch ARGS`` in the background; its lines, as they come."""

    def __init__(self, *args: str, cwd):
        self.process = subprocess.Popen([sys.executable, "-m", "autograder.cli", "check", "--watch", *args], cwd=cwd,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)

    def until(self, words: str, timeout: float = 120) -> list[str]:
        """The lines up to the first that holds ``words``."""
        deadline = time.monotonic() + timeout
        got = []
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            got.append(line)
            self.seen.append(line)
            if words in line:
                return got
        raise AssertionError(f"{words!r} never came; the output was:\n" + "".join(self.seen))

    def recheck_showing(self, words: str, timeout: float = 120) -> list[str]:
        """The lines up to the end of the first re-check whose output holds ``words`` (an editor's save may come
        as two events, so the re-check of a half-written file can come first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.until("re-checked after a save", timeout=deadline - time.monotonic())
            if any(words in line for line in got):
                return got
        raise AssertionError(f"no re-check showed {words!r}; the output was:\n" + "".join(self.seen))

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def test_a_save_is_checked_again_until_ctrl_c(tmp_path):
    folder = tmp_path / "exercises"
    shutil.copytree(SAMPLES / "carol", folder)
    watching = Watching(str(folder), "--step", "CausalAttention", cwd=tmp_path)
    try:
        first = watching.until("watching")
        assert any("causal_attention.CausalAttention  FAILED" in line for line in first)  # control: carol's bug
        shutil.copy(SAMPLES / "alice" / "causal_attention.py", folder / "causal_attention.py")  # the fix, saved
        again = watching.recheck_showing("causal_attention.CausalAttention  passed         4/4")
        assert "re-checked after a save of causal_attention.py" in again[-1]
        assert not any("\033[2J" in line for line in again)  # not a terminal: the screen is not cleared
        (folder / "notes.txt").write_text("not a checked file")  # no re-check for it; the next save is seen
        shutil.copy(SAMPLES / "carol" / "causal_attention.py", folder / "causal_attention.py")
        watching.recheck_showing("causal_attention.CausalAttention  FAILED")
        assert not any("notes.txt" in line for line in watching.seen)
    finally:
        code = watching.stop()
    assert code == 0


def test_a_notebook_is_watched_by_its_name(tmp_path):
    path = one_notebook(SAMPLES / "carol", tmp_path, name="attention.ipynb")
    watching = Watching(str(path), "--step", "CausalAttention", cwd=tmp_path)
    try:
        assert any("FAILED" in line for line in watching.until("watching"))
        one_notebook(SAMPLES / "alice", tmp_path, name="attention.ipynb")
        again = watching.recheck_showing("causal_attention.CausalAttention  passed")
        assert "re-checked after a save of attention.ipynb" in again[-1]
    finally:
        assert watching.stop() == 0


@pytest.mark.unit
def test_what_is_watched(tmp_path):
    (tmp_path / "attention.ipynb").write_text("{}")
    folder, relevant = watch.watched(tmp_path / "attention.ipynb")
    assert folder == tmp_path.resolve()
    assert relevant(None, str(tmp_path / "attention.ipynb")) and not relevant(None, str(tmp_path / "other.ipynb"))
    folder, relevant = watch.watched(tmp_path)
    assert relevant(None, str(tmp_path / "causal_attention.py"))
    assert not relevant(None, str(tmp_path / "notes.txt"))
    assert not relevant(None, str(tmp_path / ".ipynb_checkpoints" / "attention-checkpoint.ipynb"))
    assert not relevant(None, str(tmp_path / "__pycache__" / "x.py"))
    assert os.path.isdir(folder)
