"""Assemble the Gradescope autograder zip from the repository, reproducibly."""
from __future__ import annotations

import tomllib
from pathlib import Path

from autograder.assign import recorded_from
from autograder.course import load_course
from autograder.release.reproducible_zip import tree_entries, write_zip
from autograder.release.pins import installed_closure, requirement_name, requirements_txt

from .scripts import RUN_AUTOGRADER, SETUP_SH

EXECUTABLES = frozenset({"setup.sh", "run_autograder"})
GRADING_EXTRA = ["pytest"]  # grade autograde runs the hidden suites with pytest


def grading_roots(pyproject: Path) -> list[str]:
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    return sorted({requirement_name(dep) for dep in deps} | set(GRADING_EXTRA))


def entries(course_file: Path) -> list[tuple[str, Path | bytes]]:
    course_file = Path(course_file).resolve()
    course = load_course(course_file)  # a broken course.yml stops here, not on Gradescope
    root = course_file.parent
    solutions, suites = (root / course.solutions).resolve(), (root / course.suites).resolve()
    package = root / "autograder"
    if not package.is_dir() or package not in suites.parents:
        raise ValueError(f"course.yml: suites {course.suites!r} must be inside {package}")
    stale = recorded_from.refusal(course_file, course, package / "check", then="grade gradescope again")
    if stale:  # the zip would grade with other public checks than the students' grade check
        raise ValueError(f"{stale}; nothing was written")
    pins = installed_closure(grading_roots(root / "pyproject.toml"))
    found: list[tuple[str, Path | bytes]] = [
        ("setup.sh", SETUP_SH.encode()),
        ("run_autograder", RUN_AUTOGRADER.encode()),
        ("requirements.txt",
         requirements_txt(pins, "the Gradescope grading environment (setup.sh installs it)").encode()),
        ("course.yml", course_file),
        ("pyproject.toml", root / "pyproject.toml"),
        ("README.md", root / "README.md"),
    ]
    found += [(f"solutions/{p.name}", p) for p in sorted(solutions.glob("*.py"))]
    found += tree_entries(package, "autograder/")
    return found


def build_gradescope(out: Path, course_file: Path = Path("course.yml")) -> dict:
    files = entries(course_file)
    write_zip(Path(out), files, executables=EXECUTABLES)
    return {"zip": Path(out).resolve(), "files": len(files)}
