"""Which of the instructor's files a worker could read: checked before untrusted code is graded.

At ``uid+rlimits`` (root, without namespaces or Landlock) a worker runs as a fresh uid, and the filesystem is
whatever that uid may read: the reference solutions and the hidden suites (mode 0644 in a clone), the kit's own
tree, course.yml, the class's hand-ins and their staged copies, the results. A worker finds where they are without
being told (its own frames name the kit's folder, every process's command line is readable), so hiding their names
is not enough: they must be unreadable. ``unreadable`` forks a child that becomes a worker's uid and tries to open
every one of them (each file, and each folder to list it); whatever it could open is named, with the fix, and the
run refuses to grade untrusted code there (``autograde/run_policy.py``). At the levels with an allow-list
(namespaces, userns, uid+landlock, landlock) a worker reads nothing else whatever the modes, so only a protected
file under an allow-listed folder (a course kept under ``/usr``, a kit installed into site-packages) would be
readable: ``under_allow_list`` names those. ``tests/integration/test_isolation.py`` shows both, with their controls.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from autograder.grading.suites import stored_answers
from autograder.worker.isolation import Level

#: at most this many files are tried (a class's hand-ins and results included)
MAX_FILES = 50_000


def kit_folder() -> Path:
    """The kit's own tree (the ``autograder`` package: the hidden suites, the grading code)."""
    return Path(__file__).resolve().parent.parent


def protected(grader, staging: Path | None = None, more: tuple[tuple[str, str], ...] = ()) -> dict[Path, str]:
    """The instructor's files a worker must not read, each folder or file with what it is, in a person's words;
    ``more``: (path, what) pairs (the class's hand-ins, the results folder)."""
    found = {kit_folder(): "the kit", grader.course_file: "course.yml",
             grader.root / grader.course.solutions: "the reference solutions", grader.suites: "the hidden suites"}
    answers = stored_answers.folder()
    if answers is not None:
        found[answers] = "the kept reference answers"
    if staging is not None:
        found[staging] = "the staged submissions"
    for path, what in more:
        found[Path(path)] = what
    return {Path(os.path.abspath(p)): what for p, what in found.items()}


def _entries(root: Path, budget: list[int]):
    """``root`` and everything below it (never through a link), up to the budget."""
    stack = [str(root)]
    while stack and budget[0] > 0:
        path = stack.pop()
        budget[0] -= 1
        yield path
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                with os.scandir(path) as entries:
                    stack.extend(e.path for e in entries if not e.is_symlink())
        except OSError:
            continue


def readable_by(uid: int, paths: list[str]) -> list[str]:
    """Those of ``paths`` a process of ``uid`` (no groups but its own) can open for reading: a file read, a folder
    listed. Tried in a forked child that has become that uid, as a worker would."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(read)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            opened = []
            for path in paths:
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
                except OSError:
                    continue
                os.close(fd)
                opened.append(path)
            with os.fdopen(write, "w") as fh:
                json.dump(opened, fh)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data) if data else list(paths)


def unreadable(uid: int, roots: dict[Path, str]) -> str | None:
    """None if a process of ``uid`` can read none of ``roots`` (nor anything below them); else which it can, and how
    much, in one sentence with the fix."""
    budget = [MAX_FILES]
    listed = {root: list(_entries(root, budget)) for root in roots if os.path.lexists(root)}
    opened = set(readable_by(uid, [p for paths in listed.values() for p in paths]))
    said = []
    for root, paths in listed.items():
        got = [p for p in paths if p in opened]
        if got:
            said.append(f"{roots[root]} ({root}: {len(got)} of {len(paths)} readable)")
    if not said:
        return None
    shown = sorted({str(root) for root in listed if any(p in opened for p in listed[root])})
    folders = " ".join(f for f in shown if not any(f.startswith(g.rstrip("/") + "/") for g in shown))
    return ("a worker's uid could read " + ", ".join(said) + f". Make them yours alone (chmod -R go-rwx {folders}), "
            "grade where Landlock or namespaces keep workers from them (docs/isolation.md), or pass "
            "--trust-submissions for code you trust")


def under_allow_list(roots: dict[Path, str], allowed: list[str]) -> str | None:
    """None if none of ``roots`` lies under a folder every worker may read (``allowed``: the allow-list); else which
    does, in one sentence."""
    said = [f"{what} ({root}, under {folder})" for root, what in roots.items()
            for folder in allowed if str(root) == folder or str(root).startswith(folder.rstrip("/") + "/")]
    if not said:
        return None
    return ("every worker may read " + ", ".join(said) + ": move them out of the folders the sandbox lets workers "
            "read (the interpreter's and the system's), or pass --trust-submissions for code you trust")


def refusal(level: Level, uid: int, roots: dict[Path, str], allowed: list[str]) -> str | None:
    """Why untrusted code must not be graded at ``level`` with these files where they are; None if it may."""
    if level == Level.UID:
        return unreadable(uid, roots)
    if level != Level.RLIMITS:
        return under_allow_list(roots, allowed)
    return None
