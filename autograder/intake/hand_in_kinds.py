"""The kinds of file a hand-in may be, by suffix, and the name a hand-in is graded under.

One table for discovery (``discover.py``: what is a hand-in) and staging (``stage.py``: how it is read). A ``.zip``,
a tar archive, a notebook and a ``.py`` file are graded; an archive of another kind is named as unsupported; any other
file is not code (tests/unit/test_hand_ins.py).
"""
from __future__ import annotations

from pathlib import Path

NOTEBOOK = (".ipynb",)
ZIP = (".zip",)
TAR = (".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz2", ".tbz", ".tar.xz", ".txz")
SOURCE = (".py",)
#: what is graded as it is handed in
GRADED = ZIP + TAR + NOTEBOOK + SOURCE
#: archives that are not unpacked: named as unsupported, with what to hand in instead
OTHER_ARCHIVES = (".7z", ".rar", ".gz", ".bz2", ".xz", ".zst", ".tar.zst", ".lz", ".lzma", ".cab", ".arj")


def suffix(path: Path) -> str:
    """The suffix a hand-in is known by, lower case, compound ones whole (``.tar.gz``); '' for a folder."""
    if path.is_dir() and not path.is_symlink():
        return ""
    name = path.name.lower()
    for known in sorted((*GRADED, *OTHER_ARCHIVES), key=len, reverse=True):
        if name.endswith(known) and len(name) > len(known):
            return known
    return Path(name).suffix


def hand_in_name(path: Path) -> str:
    """The name a hand-in is graded under: a folder's name, a file's without its suffix (``alice.tar.gz``: alice)."""
    known = suffix(path)
    return path.name[: -len(known)] if known and path.name.lower().endswith(known) else path.name


def gradable(path: Path) -> bool:
    """A folder, or a file of a kind that is graded (``GRADED``)."""
    return suffix(path) in ("", *GRADED)
