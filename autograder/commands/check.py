"""``grade check``: a student's exercises against the public cases of the course documents.

The check itself is ``check/checking.py``'s; this verb only decides where it runs: asked of the student's warm server
(``check/warm_server.py``), which answers without loading torch here, else in this process, which then leaves that
server behind for the next check (and for the notebook's ``%grade check``). ``--watch`` checks again after each save,
from this warm process.
"""
from __future__ import annotations

import sys
from pathlib import Path

from autograder import console
from autograder.check import warm_server
from autograder.usage import UsageError


def main(path: Path | None = None, steps: tuple[str, ...] = (), as_json: bool = False,
         color: bool = False, html_file: Path | bool | None = None, watch: bool = False) -> int:
    """Check the exercises in ``path``; 0 when every check passes. ``path``: what ``grade autograde`` takes (a
    folder of module files, one notebook per module, one notebook for all modules, a .zip), or one module file.

    ``path`` None: ./exercises, or the current folder when it holds the exercise files itself.
    ``html_file``: also write the feedback page (the page grade autograde writes), and say where;
    ``True``: to ``feedback.html`` here, or beside the checked folder when run inside it (``checking.page_path``).
    ``watch``: check again after each save, from this warm process, until Ctrl-C (``check/watch.py``)."""
    options = {"path": None if path is None else str(path), "steps": list(steps), "as_json": as_json, "color": color,
               "html_file": html_file if html_file is None or isinstance(html_file, bool) else str(html_file)}
    warm = not watch and warm_server.enabled()
    if warm:
        code = warm_server.run_served(options)
        if code is not None:
            return code
    from autograder.check import checking

    data = checking.load()
    if not watch:
        code = checking.terminal_check(path, tuple(steps), data, as_json, color, html_file)
        if warm:
            warm_server.start()
        return code
    return _watch(checking, path, tuple(steps), data, as_json, color, html_file)


def _watch(checking, path: Path | None, steps: tuple[str, ...], data: dict, as_json: bool, color: bool,
           html_file: Path | bool | None) -> int:
    """``--watch``: the first check as usual (a mistake exits 2), then one per save, from one warm zygote."""
    from autograder.check import watch
    from autograder.sandbox.local_zygote import LocalZygote

    folder = checking.default_folder(data["modules"]) if path is None else Path(path)
    zygote = LocalZygote()
    first = [True]

    def again() -> None:
        try:
            checking.terminal_check(folder, steps, data, as_json, color, html_file, zygote)
        except UsageError as exc:
            if first[0]:
                raise
            console.warn(str(exc), label="error: ")
        finally:
            first[0] = False

    def clear(_names) -> None:
        if sys.stdout.isatty():
            sys.stdout.write("\033[2J\033[H")
            sys.stdout.flush()

    try:
        watch.loop(folder, again, on_change=clear, said=console.note)
    except KeyboardInterrupt:  # Ctrl-C during a check: the way to stop watching, like Ctrl-C while waiting
        pass
    finally:
        zygote.close()
    return 0
