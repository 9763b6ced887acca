"""``worker/tempdirs.py``: a folder of the grader's own leaves nothing behind where it cannot be locked, and is
removed with its lock let go of first."""
from __future__ import annotations

import errno
import os

import pytest

from autograder.worker import locks, tempdirs


def test_a_folder_that_cannot_be_locked_leaves_nothing(tmp_path, monkeypatch):
    """On a filesystem without locks (NFS without its lock daemon: ENOLCK) ``make`` raises and leaves no hidden
    folder behind, which nothing would sweep for an hour. The control: where locks work, the folder is made."""
    made = tempdirs.make("probe-", base=str(tmp_path))
    assert made.is_dir() and (made / tempdirs.LOCK).exists()  # the control
    tempdirs.remove(made)

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(locks.fcntl, "flock", no_locks)
    with pytest.raises(OSError):
        tempdirs.make("probe-", base=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_remove_lets_go_of_the_lock_before_the_folder(tmp_path):
    """``remove`` closes the lock file's descriptor before removing the folder (on NFS, a file still open leaves a
    ``.nfs*`` file, and with it the folder); the folder is gone and no longer held."""
    made = tempdirs.make("probe-", base=str(tmp_path))
    fd = tempdirs._held[str(made)]
    tempdirs.remove(made)
    assert not made.exists() and str(made) not in tempdirs._held
    with pytest.raises(OSError):
        os.fstat(fd)  # closed


def test_a_folder_made_where_nothing_locks_is_not_swept_while_its_maker_lives(tmp_path, monkeypatch):
    """Where nothing can be locked (no fcntl: Windows, and test_portable's shim), a folder gets no lock file, so
    another run, which can lock, judges it by its maker's pid and keeps it while that process lives. The control:
    with a lock file nobody holds in it, as such a folder had before, the other run swept it away from under a
    running `grade check` (its worker's working folder: test_portable failed under load, "your code ended the worker
    process")."""
    monkeypatch.setattr(locks, "fcntl", None)
    made = tempdirs.make("probe-", base=str(tmp_path))
    monkeypatch.undo()  # from here on, another run on the same machine, with locks
    assert not (made / tempdirs.LOCK).exists()
    tempdirs.sweep("probe-", base=str(tmp_path))
    assert made.is_dir()
    (made / tempdirs.LOCK).write_text("")  # the control: unlocked, as before
    tempdirs.sweep("probe-", base=str(tmp_path))
    assert not made.exists()
