"""Folders the kit keeps state in outside the user's home are its user's own, or refused in one line
(``autograder/worker/owned_dirs.py``): another user's lock folder full of links makes root create nothing, a lock
folder an earlier root run left behind costs a normal user's ``grade autograde`` nothing, and a warm ``grade check``
server's folder another user made first is said in one line while the check runs in-process.

Each test has its control: what the code before these checks did with the same folder (a link followed, a file
created at its target, a FIFO blocked on, a traceback). The tests that need a second user run as root
(``tests/local_users.py``); those that touch the machine's fixed paths take the machine to themselves
(``tests/machine_lock.py``) and remove what they made there.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from autograder.sandbox import uids
from autograder.worker import owned_dirs

from .conftest import ROOT
from .local_users import is_root, other_user, run_as

SAMPLES = ROOT / "samples" / "submissions"
needs_root = pytest.mark.skipif(not is_root(), reason="a folder of another user's is made by root (useradd, chown)")


@pytest.fixture
def shared():
    """A folder every user may write in, sticky, as ``/tmp`` and ``/run/lock`` are (``tmp_path`` is root's alone, which
    no other user may enter); removed with all that was made in it."""
    folder = Path(tempfile.mkdtemp(prefix="owned-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _as(user, script: str, *args: str) -> None:
    """Run a shell script as ``user`` (its own uid, no groups), which must succeed."""
    done = run_as(user, ["/bin/sh", "-ec", script, "sh", *args], cwd="/", timeout=120)
    assert done.returncode == 0, done.stderr


def _squat(user, folder: Path, targets: Path, count: int = uids.BLOCKS) -> None:
    """As ``user``: make ``folder`` first, holding a link ``N.lock`` to ``targets/nologin-N`` for each uid block."""
    _as(user, 'mkdir -m 755 "$1"; i=0; while [ $i -lt "$3" ]; do ln -s "$2/nologin-$i" "$1/$i.lock"; i=$((i+1)); done',
        str(folder), str(targets), str(count))


def _targets(shared: Path) -> Path:
    """Where the links point: a folder of root's, empty, in which root (only) could create the files named."""
    targets = shared / "targets"
    targets.mkdir(mode=0o755)
    return targets


# -- owned_dirs, piece by piece ------------------------------------------------------------------------
@pytest.mark.unit
@needs_root
def test_a_folder_is_used_only_when_it_is_ours_not_a_link_and_closed_to_others(shared):
    """``open_dir`` refuses a link (even one to a folder of ours), a folder another user made, and one others may
    enter or write in, each with one line that names it; the control: a folder of ours, mode 0700, is opened."""
    own = shared / "own"
    fd = owned_dirs.open_dir(own)  # the control: made, 0700, ours
    try:
        assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o700 and os.fstat(fd).st_uid == 0
    finally:
        os.close(fd)
    (shared / "link").symlink_to(own)
    theirs = shared / "theirs"
    _as(other_user(), 'mkdir -m 700 "$1"', str(theirs))
    refusals = {}
    for name in ("link", "theirs"):
        with pytest.raises(owned_dirs.Refused) as refused:
            owned_dirs.open_dir(shared / name)
        refusals[name] = str(refused.value)
    assert "symbolic link" in refusals["link"] and "belongs to attn-other" in refusals["theirs"]
    os.chmod(own, 0o755)
    with pytest.raises(owned_dirs.Refused, match="may enter it"):
        owned_dirs.open_dir(own)
    os.close(owned_dirs.open_dir(own, private=False))  # one others may read, not write: enough for a socket's
    os.chmod(own, 0o777)
    with pytest.raises(owned_dirs.Refused, match="may write in it"):
        owned_dirs.open_dir(own, private=False)
    assert all("\n" not in line for line in refusals.values())


@pytest.mark.unit
def test_a_file_inside_is_never_opened_through_a_link_nor_blocked_on_by_a_fifo(tmp_path):
    """``open_file`` with ``O_CREAT`` refuses a link and creates nothing at its target, and a FIFO in a file's place
    is refused at once. The control: the plain ``os.open(..., O_RDWR | O_CREAT)`` the lock folder used to do creates
    the file the link names."""
    folder = tmp_path / "locks"
    folder.mkdir(mode=0o700)
    target = tmp_path / "nologin"
    (folder / "1.lock").symlink_to(target)
    os.mkfifo(folder / "2.lock")
    fd = owned_dirs.open_dir(folder)
    try:
        with pytest.raises(owned_dirs.Refused, match="symbolic link"):
            owned_dirs.open_file(fd, "1.lock", os.O_RDWR | os.O_CREAT)
        assert not target.exists()
        with pytest.raises(owned_dirs.Refused, match="not a regular file"):
            owned_dirs.open_file(fd, "2.lock", os.O_RDONLY)
        os.close(owned_dirs.open_file(fd, "3.lock", os.O_RDWR | os.O_CREAT))  # a file of ours: opened
    finally:
        os.close(fd)
    os.close(os.open(folder / "1.lock", os.O_RDWR | os.O_CREAT, 0o600))  # the control: the old open
    assert target.exists()
