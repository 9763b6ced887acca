"""The LTI ledger (``lti.sqlite3`` and the ``-wal`` and ``-shm`` files sqlite keeps beside it) can be read by its
owner only: in an existing ``--store`` folder that everyone can list, under the laxest umask, when sqlite makes those
files again later, and in a store an older kit made 0644. A second local user tries to read each; the control is a
file made the ordinary way in the same folder, which that user reads."""
from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from autograder.lti.store import Store

from tests.support.local_users import other_user, readable_by

LEDGER = ("lti.sqlite3", "lti.sqlite3-wal", "lti.sqlite3-shm")


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def shared():
    """A folder under /tmp that every local user can enter and list (tmp_path is root's own, 0700)."""
    place = Path(tempfile.mkdtemp(prefix="lti-ledger-", dir="/tmp"))
    place.chmod(0o755)
    yield place
    shutil.rmtree(place, ignore_errors=True)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def open_store(folder: Path) -> Store:
    """The store opened and written under umask 000, so nothing but the kit's own modes can keep others out."""
    with umask(0):
        store = Store(folder)
        store.set_tool(base_url="https://grader.example.edu")
    return store


def test_the_ledger_is_owner_only_in_a_folder_others_can_list(shared):
    other = other_user()
    folder = shared / "store"
    folder.mkdir()
    folder.chmod(0o755)                                   # an existing --store folder, as the user made it
    store = open_store(folder)
    with umask(0):
        control = folder / "notes.txt"
        control.write_text("made the ordinary way, beside the ledger\n")
    try:
        files = [folder / name for name in LEDGER]
        assert [f.exists() for f in files] == [True, True, True]
        assert {f.name: oct(mode(f)) for f in files} == {f.name: "0o600" for f in files}
        assert {f.name: readable_by(other, f) for f in files} == {f.name: False for f in files}
        assert oct(mode(control)) == "0o666" and readable_by(other, control)   # the control: same place, same user
        # sqlite removes its -wal and -shm files when the last connection closes, and makes them again later
        store.close()
        assert not (folder / "lti.sqlite3-wal").exists()
        store = open_store(folder)
        assert {f.name: oct(mode(f)) for f in files} == {f.name: "0o600" for f in files}
        assert {f.name: readable_by(other, f) for f in files} == {f.name: False for f in files}
    finally:
        store.close()


def test_a_ledger_an_older_kit_made_readable_is_made_owner_only(shared):
    other = other_user()
    folder = shared / "store"
    open_store(folder).close()
    folder.chmod(0o755)
    (folder / "lti.sqlite3").chmod(0o644)                 # as an older kit left it
    assert readable_by(other, folder / "lti.sqlite3")     # the control: as it was, the other user reads it
    store = open_store(folder)
    try:
        assert mode(folder / "lti.sqlite3") == 0o600 and not readable_by(other, folder / "lti.sqlite3")
    finally:
        store.close()


def test_a_store_folder_the_kit_makes_is_owner_only(shared):
    other = other_user()
    store = open_store(shared / "new" / "store")
    store.close()
    assert mode(shared / "new" / "store") == 0o700 and not readable_by(other, shared / "new" / "store")
    assert readable_by(other, shared / "new")             # the control: the parent it made the ordinary way
