"""Find the submissions named on the command line: submissions, or folders of them."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .times import nbgrader_stamp

KINDS = (".zip", ".ipynb")


@dataclass(frozen=True)
class Source:
    name: str
    path: Path


def is_submission(folder: Path, modules: list[str]) -> bool:
    """A folder is one submission if it holds a module (as .py or .ipynb) at its top."""
    return any((folder / f"{m}{ext}").exists() or (folder / f"{m}{ext}").is_symlink()
               for m in modules for ext in (".py", ".ipynb")) or (folder / "__init__.py").exists()


def _name(path: Path) -> str:
    return path.name[: -len(path.suffix)] if path.suffix.lower() in KINDS and path.is_file() else path.name


def discover(paths: list[Path], modules: list[str]) -> tuple[list[Source], list[str]]:
    """Expand ``paths`` into submissions; return them and a problem per path that is none."""
    found: list[Source] = []
    problems: list[str] = []
    for path in map(Path, paths):
        if not path.exists() and not path.is_symlink():
            problems.append(f"{path}: no such file or folder")
        elif path.is_file() and path.suffix.lower() not in KINDS:
            problems.append(f"{path}: expected a submission folder, a .zip archive, a notebook, or a folder of them")
        elif path.is_file() or is_submission(path, modules):
            found.append(Source(_name(path), path.absolute()))
        else:
            inner = [p for p in sorted(path.iterdir()) if not p.name.startswith((".", "__"))
                     and (p.is_dir() or p.suffix.lower() in KINDS)]
            if not inner:
                problems.append(f"{path}: neither a submission (no {modules[0]}.py ...) nor a folder of submissions")
            found += [Source(_name(p), p.absolute()) for p in inner]
    names = [s.name for s in found]
    dupes = sorted({n for n in names if names.count(n) > 1})
    for name in dupes:
        paths_ = ", ".join(str(s.path) for s in found if s.name == name)
        problems.append(f"several submissions are named {name!r} ({paths_}); their results would overwrite "
                        "each other, so none of them was graded: rename all but one")
    return [s for s in found if s.name not in dupes], problems


def nbgrader_submissions(course_dir: Path, assignment: str | None) -> tuple[list[Source], dict[str, str], list[str]]:
    """An nbgrader course's ``submitted/<student>/<assignment>/``: one submission per student, named after the
    student, with the time nbgrader recorded (its ``timestamp.txt``)."""
    submitted = Path(course_dir) / "submitted"
    if not submitted.is_dir():
        return [], {}, [f"{course_dir}: not an nbgrader course folder (no submitted/ in it; run nbgrader collect first)"]
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
