"""``leftovers.discover``: the world-writable folders a worker's uid could leave a file in, found by a walk that
enters no read-only or kernel filesystem. The machine's mounts are stood in for by a folder tree of this test's own
(``_mounts`` gives the walk its starts and what it skips), so it needs no root.
"""
from __future__ import annotations

import os

from autograder.worker import leftovers


def _tree(top):
    """top/open/shared (world-writable), top/mounted_ro/shared (world-writable, on a "read-only mount"),
    top/mounted_ro/deeper/shared (the same, one folder further down)."""
    folders = {name: top / name for name in ("open", "open/shared", "mounted_ro", "mounted_ro/shared",
                                             "mounted_ro/deeper", "mounted_ro/deeper/shared")}
    for path in folders.values():
        path.mkdir(parents=True, exist_ok=True)
    os.chmod(top, 0o755)
    for name, path in folders.items():
        os.chmod(path, 0o777 if name.endswith("shared") else 0o755)
    return folders


def test_a_read_only_mount_is_not_walked_and_the_rest_is(tmp_path, monkeypatch):
    top = tmp_path / "machine"
    folders = _tree(top)
    monkeypatch.setattr(leftovers, "_mounts", lambda: [(str(top), "ext4", False),
                                                      (str(folders["mounted_ro"]), "ext4", True)])
    found = leftovers.discover(extra=())
    assert str(folders["open/shared"]) in found
    assert not [f for f in found if f.startswith(str(folders["mounted_ro"]))], found
    # control: the same tree with that mount writable: both folders below it are found (the deeper one too)
    monkeypatch.setattr(leftovers, "_mounts", lambda: [(str(top), "ext4", False),
                                                      (str(folders["mounted_ro"]), "ext4", False)])
    found = leftovers.discover(extra=())
    assert {str(folders["mounted_ro/shared"]), str(folders["mounted_ro/deeper/shared"])} <= set(found), found


def test_a_start_below_a_skipped_folder_is_not_entered(tmp_path, monkeypatch):
    """A shared folder of the usual list (here ``top/mounted_ro/deeper``) below a read-only mount is a root only if
    it is world-writable itself: nothing below it is walked."""
    top = tmp_path / "machine"
    folders = _tree(top)
    start = (str(folders["mounted_ro/deeper"]),)
    monkeypatch.setattr(leftovers, "_mounts", lambda: [(str(folders["mounted_ro"]), "ext4", True)])
    assert leftovers.discover(extra=start) == ()
    # control: the same start on a writable mount is walked, and the folder below it found
    monkeypatch.setattr(leftovers, "_mounts", lambda: [(str(folders["mounted_ro"]), "ext4", False)])
    assert str(folders["mounted_ro/deeper/shared"]) in leftovers.discover(extra=start)
