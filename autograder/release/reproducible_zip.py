"""Deterministic zip archives: the same files give the same bytes, whenever and wherever they are built.

Entries are sorted, every timestamp is ``SOURCE_DATE_EPOCH`` (https://reproducible-builds.org/specs/
source-date-epoch/; default 1980-01-01, the earliest time a zip can hold), permissions are 0644, or 0755
for a file its owner may execute, and the compression level is fixed. Caches (``__pycache__``, ``*.pyc``)
never go in.
"""
from __future__ import annotations

import os
import stat
import tempfile
import time
import zipfile
from pathlib import Path

from ..outputs import atomic_file

ZIP_EPOCH = 315532800  # 1980-01-01 00:00:00 UTC
SKIP_NAMES = {"__pycache__", ".DS_Store", ".pytest_cache"}
SKIP_SUFFIXES = (".pyc", ".pyo")


def source_date_epoch() -> int:
    value = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not value:
        return ZIP_EPOCH
    try:
        epoch = int(value)
    except ValueError:
        raise ValueError(f"SOURCE_DATE_EPOCH={value!r} is not a whole number of seconds") from None
    return max(epoch, ZIP_EPOCH)


def tree_entries(folder: Path, prefix: str = "") -> list[tuple[str, Path]]:
    """(name in the archive, file) for every file under ``folder``, caches left out."""
    folder = Path(folder)
    entries = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if any(part in SKIP_NAMES for part in rel.parts) or path.name.endswith(SKIP_SUFFIXES):
            continue
        if path.is_file():
            entries.append((f"{prefix}{rel.as_posix()}", path))
    return entries


def write_zip(dest: Path, entries: list[tuple[str, Path | bytes]], epoch: int | None = None,
              executables: frozenset[str] = frozenset()) -> Path:
    """Write ``entries`` (archive name, file or bytes) to ``dest``, atomically, byte-reproducibly.

    A file keeps its owner's execute bit (0755, else 0644); names in ``executables`` get 0755 whatever.
    """
    dest = Path(dest)
    when = time.gmtime(source_date_epoch() if epoch is None else max(epoch, ZIP_EPOCH))[:6]
    names = [name for name, _ in entries]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"two files would have the same name in {dest.name}: {', '.join(dupes)}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}-", suffix=".tmp")
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w") as archive:
            for name, source in sorted(entries, key=lambda e: e[0]):
                if isinstance(source, bytes):
                    data, mode = source, 0o644
                else:
                    data = Path(source).read_bytes()
                    mode = 0o755 if Path(source).stat().st_mode & stat.S_IXUSR else 0o644
                if name in executables:
                    mode = 0o755
                info = zipfile.ZipInfo(name, date_time=when)
                info.create_system = 3  # Unix, so the permissions below mean what they say
                info.external_attr = (stat.S_IFREG | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
        os.chmod(tmp, 0o644)
        atomic_file.commit(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest
