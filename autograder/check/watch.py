"""``grade check --watch``: check again each time a checked file or notebook is saved, from a warm process.

Saves are seen by ``watchfiles`` (Rust's notify: inotify on Linux, FSEvents on macOS, ReadDirectoryChangesW on
Windows), with a short debounce so an editor's burst of writes is one change. The folder is watched, never
the file alone: editors save by writing a new file and renaming it over the old one.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

KINDS = (".py", ".ipynb", ".zip")
IGNORED = {"__pycache__", ".ipynb_checkpoints", ".git"}
DEBOUNCE_MS = 50  # watchfiles' default (1.6 s) would be most of a re-check


def watched(path: Path) -> tuple[Path, Callable[[object, str], bool]]:
    """(the folder to watch, the filter of the changes that call for a re-check) for ``path``."""
    path = Path(path).resolve()
    if path.is_file():
        return path.parent, lambda _change, changed: Path(changed).name == path.name

    def relevant(_change, changed: str) -> bool:
        parts = Path(changed).relative_to(path).parts if Path(changed).is_relative_to(path) else ()
        return changed.endswith(KINDS) and not any(p in IGNORED or p.startswith(".") for p in parts)

    return path, relevant


def loop(path: Path, check_once: Callable[[], object], on_change: Callable[[set[str]], None] | None = None,
         said: Callable[[str], None] = print, stop_event=None) -> None:
    """Check now, then again after each relevant change under ``path`` until Ctrl-C (or ``stop_event``).

    ``on_change``: called with the changed paths before each re-check (``grade check`` clears the screen)."""
    import watchfiles

    folder, relevant = watched(path)
    check_once()
    ready = False
    # yield_on_timeout: an empty batch once the watcher runs, so "watching" is said only when a save will be seen
    for changes in watchfiles.watch(folder, watch_filter=relevant, debounce=DEBOUNCE_MS, step=10,
                                    rust_timeout=500, yield_on_timeout=True, stop_event=stop_event,
                                    raise_interrupt=False):
        if not ready:
            ready = True
            said(f"watching {path} for saves (Ctrl-C stops)")
        if not changes:
            continue
        names = {Path(p).name for _, p in changes}
        if on_change:
            on_change(names)
        started = time.perf_counter()
        check_once()
        said(f"re-checked after a save of {', '.join(sorted(names))} in {time.perf_counter() - started:.2f} s; "
             f"watching {path} (Ctrl-C stops)")
