"""Outputs are written whole, and a device or a pipe the user names is written through, never renamed over.

``grade check --html=/dev/null`` used to rename its page over /dev/null: as root, that left an ordinary file
there, and every later ``>/dev/null`` on the machine (mmdebstrap's, in test_gradescope_root) wrote into it.
"""
from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from autograder.outputs import atomic_file
from autograder.release.reproducible_zip import write_zip

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX's")


def read_pipe(path: Path) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []

    def reader():
        with open(path, "rb") as pipe:
            got.append(pipe.read())
    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    return thread, got


def test_a_pipe_is_written_through_and_stays_a_pipe(tmp_path):
    pipe = tmp_path / "page.html"
    os.mkfifo(pipe)
    thread, got = read_pipe(pipe)
    atomic_file.write_text(pipe, "<html>page</html>\n")
    thread.join(timeout=60)
    assert got == [b"<html>page</html>\n"]
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]  # no temporary file left beside it


def test_the_control_renaming_over_a_pipe_replaces_it(tmp_path):
    """What the kit did before: the check above can fail."""
    pipe, tmp = tmp_path / "page.html", tmp_path / ".page.html.tmp"
    os.mkfifo(pipe)
    tmp.write_text("<html>page</html>\n")
    os.replace(tmp, pipe)
    assert not stat.S_ISFIFO(os.stat(pipe).st_mode)


def test_a_regular_file_is_replaced_whole_with_the_mode_asked(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("old")
    before = os.stat(path).st_ino
    atomic_file.write_text(path, "{}\n", durable=True)
    assert path.read_text() == "{}\n" and os.stat(path).st_ino != before  # a new file, renamed into place
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_a_zip_committed_to_a_pipe_arrives_whole(tmp_path):
    pipe = tmp_path / "bundle.zip"
    os.mkfifo(pipe)
    thread, got = read_pipe(pipe)
    write_zip(pipe, [("a.txt", b"hello")])
    thread.join(timeout=60)
    assert got and got[0].startswith(b"PK") and stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle.zip"]
