"""Find the hand-ins named on the command line: submissions, or folders of them.

Every entry a student handed in becomes one hand-in, graded or named with its reason, never left out without a
word (tests/unit/test_hand_ins.py):

- a folder, a ``.zip``, a tar archive (``.tar.gz``, ``.tgz``, ``.tar``, ``.tar.bz2``, ``.tar.xz``), a notebook and a
  single ``.py`` file are graded (``stage.py`` says what it could not use);
- an archive of another kind (``.7z``, ``.rar``...) and any other file (a ``.txt`` note, a PDF) are hand-ins too, each
  named, not graded, with its reason;
- a file that shares its name with a gradable hand-in (``alice.txt`` beside ``alice.zip``) is a note handed in with it:
  counted once, with that hand-in, and named for a person to read;
- several gradable entries with one name (``alice/`` and ``alice.zip``) are one hand-in that is not graded: which one
  counts is a person's decision;
- a folder named on the command line that holds no hand-in (empty, or loose files only) is one hand-in itself.

Only a path that does not exist is a line of its own (``problems``): nothing was handed in there.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .hand_in_kinds import NOTEBOOK, OTHER_ARCHIVES, TAR, ZIP, gradable, hand_in_name, suffix
from .times import nbgrader_stamp

#: what discovery never counts: the system's and the tools' own files
IGNORED = frozenset({"__MACOSX", "__pycache__", ".ipynb_checkpoints", ".git", "Thumbs.db", "desktop.ini"})


@dataclass(frozen=True)
class Source:
    name: str
    path: Path
    #: more gradable entries of the same name (``alice/`` beside ``alice.zip``): the hand-in is not graded
    others: tuple[Path, ...] = ()
    #: files handed in beside it under its name that are not graded (``alice.txt``): named for a person to read
    beside: tuple[Path, ...] = ()


def is_submission(folder: Path, modules: list[str]) -> bool:
    """A folder is one submission if it holds a module (as .py or .ipynb) at its top."""
    return any((folder / f"{m}{ext}").exists() or (folder / f"{m}{ext}").is_symlink()
               for m in modules for ext in (".py", ".ipynb")) or (folder / "__init__.py").exists()


def _counted(path: Path) -> bool:
    return not path.name.startswith(".") and not path.name.startswith("__") and path.name not in IGNORED


def _holds_hand_ins(folder: Path) -> list[Path]:
    """The entries of a folder of submissions, or [] when the folder is one hand-in itself (it holds no folder,
    archive or notebook: it is empty, or holds loose files only)."""
    try:
        entries = [p for p in sorted(folder.iterdir()) if _counted(p)]
    except OSError:
        return []
    if not any(p.is_dir() or suffix(p) in (*ZIP, *TAR, *NOTEBOOK, *OTHER_ARCHIVES) for p in entries):
        return []
    return entries


def discover(paths: list[Path], modules: list[str]) -> tuple[list[Source], list[str]]:
    """Expand ``paths`` into hand-ins (one per name); return them and a line per path that does not exist."""
    entries: list[Path] = []
    problems: list[str] = []
    for path in map(Path, paths):
        if not path.exists() and not path.is_symlink():
            problems.append(f"{path}: no such file or folder")
        elif path.is_dir() and not path.is_symlink() and not is_submission(path, modules) and _holds_hand_ins(path):
            entries += _holds_hand_ins(path)
        else:
            entries.append(path)
    by_name: dict[str, list[Path]] = {}
    for path in entries:
        by_name.setdefault(hand_in_name(path), []).append(path.absolute())
    found = []
    for name, paths_ in by_name.items():
        graded = [p for p in paths_ if gradable(p)]
        rest = [p for p in paths_ if not gradable(p)]
        if graded:
            found.append(Source(name, graded[0], tuple(graded[1:]), tuple(rest)))
        else:  # notes alone, or an archive of a kind not unpacked: a hand-in that says why it is not graded
            found.append(Source(name, rest[0], (), tuple(rest[1:])))
    return sorted(found, key=lambda s: (s.name, str(s.path))), problems


def nbgrader_submissions(course_dir: Path, assignment: str | None) -> tuple[list[Source], dict[str, str], list[str]]:
    """An nbgrader course's ``submitted/<student>/<assignment>/``: one submission per student, named after the
    student, with the time nbgrader recorded (its ``timestamp.txt``)."""
    submitted = Path(course_dir) / "submitted"
    if not submitted.is_dir():
        return [], {}, [f"{course_dir}: not an nbgrader course folder (no submitted/ in it; run nbgrader collect "
                        "first)"]
    students = sorted(p for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
    if assignment is None:
        names = sorted({a.name for s in students for a in s.iterdir() if a.is_dir() and not a.name.startswith(".")})
        if len(names) != 1:
            return [], {}, [f"{submitted}: assignments {', '.join(names) or 'none'}: say which with --assignment"]
        assignment = names[0]
    found, times, problems = [], {}, []
    for student in students:
        folder = student / assignment
        if not folder.is_dir():
            problems.append(f"{student.name}: no submission of {assignment} in {student}")
            continue
        found.append(Source(student.name, folder.absolute()))
        when = nbgrader_stamp(folder)
        if when:
            times[student.name] = when
    if not found:
        problems.append(f"{submitted}: no student submitted {assignment}")
    return found, times, problems
