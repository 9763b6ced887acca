"""Build the student bundle in a folder, refuse to ship a leak, and zip it reproducibly.

Layout of the bundle::

    README.md            install step and grade check usage
    install_torch.py     torch 2.13.0, the CPU build, from PyTorch's CPU index where it answers (release/torch_cpu.py)
    requirements.txt     pinned versions (torch==2.13.0: installed already)
    pyproject.toml       the student package: a `grade` command with `check` only
    exercises/           the stubs, stripped from solutions/ exactly as `grade assign` does
    notebooks/           the same stubs as one notebook per module, with the course's prose and %grade check
    autograder/          what grade check imports, and the public cases (check/public_cases.*)
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from autograder import __version__
from autograder.assign import recorded_from
from autograder.assign.strip import strip_tree
from autograder.course import load_course

from . import leaks
from .reproducible_zip import tree_entries, write_zip
from .pins import installed_closure, python_range, requirements_txt
from .student_code import PACKAGE_DIR, ReleaseError, student_package
from .student_files import STUDENT_ROOTS, pyproject, readme

MARKER = ".grade-release"  # says a folder is a bundle this command built, so the next build may replace it


def check_public_cases(folder: Path) -> dict:
    """The shipped cases are all public, in public counts; the tensor file holds only their tensors."""
    from safetensors import safe_open  # noqa: PLC0415 - imported on first use: safetensors, for the stored cases only

    data = json.loads((folder / "public_cases.json").read_text(encoding="utf-8"))
    for case in data["cases"]:
        visibility = data["steps"][case["step"]]["counts"][case["count"]]["visibility"]
        if case.get("public") is not True or visibility != "public":
            raise ReleaseError(f"public_cases.json holds a hidden case: {case['step']} [{case['count']}] "
                               f"{case['name']!r}; run `grade assign` again")
    referenced = set()

    def walk(node):
        if isinstance(node, dict):
            if set(node) == {"$t"}:
                referenced.add(node["$t"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(data["cases"])
    with safe_open(str(folder / "public_cases.safetensors"), framework="pt") as tensors:
        stored = set(tensors.keys())
    if stored != referenced:
        raise ReleaseError(f"public_cases.safetensors holds {len(stored - referenced)} tensors no public case uses; "
                           "run `grade assign` again")
    return data


def check_no_leak(folder: Path, solutions: Path, suites: Path) -> None:
    found = [str(leak) for leak in leaks.scan(folder, leaks.secret_lines(solutions))]
    hidden = {hashlib.sha256(p.read_bytes()).hexdigest(): p.name for p in suites.rglob("*") if p.is_file()}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if hashlib.sha256(path.read_bytes()).hexdigest() in hidden or {"suites", "solutions"} & set(rel.parts):
            found.append(f"{rel.as_posix()}: a file of the hidden suites or the solutions")
    if found:
        raise ReleaseError("the bundle would leak instructor-only material; nothing was written:\n  "
                           + "\n  ".join(found))


def _stage(stage: Path, course_file: Path) -> dict:
    course = load_course(course_file)
    root = course_file.parent
    # the kit next to course.yml (the repository being released), else the one running
    package = root / "autograder" if (root / "autograder" / "cli.py").is_file() else PACKAGE_DIR
    stale = recorded_from.refusal(course_file, course, package / "check", then="grade release again")
    if stale:  # the bundle's grade check would check other answers than grading does
        raise ReleaseError(f"{stale}; nothing was written")
    strip_tree(root / course.solutions, stage / "exercises")
    files = student_package(package)
    for rel, source in files.items():
        target = stage / "autograder" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            target.write_bytes(source)
        else:
            shutil.copyfile(source, target)
    data = check_public_cases(stage / "autograder" / "check")
    packages = sorted({"autograder." + rel.rsplit("/", 1)[0].replace("/", ".") if "/" in rel else "autograder"
                       for rel in files if rel.endswith(".py")})
    pins = installed_closure(STUDENT_ROOTS)
    python = python_range(pins)
    public_steps = [s for s, spec in data["steps"].items()
                    if any(c["visibility"] == "public" for c in spec["counts"].values())]
    public_points = sum(c["points"] for spec in data["steps"].values() for c in spec["counts"].values()
                        if c["visibility"] == "public")
    from .student_notebooks import write_notebooks  # noqa: PLC0415 - nbformat and torch, once the cases are current

    write_notebooks(data["title"], data["modules"], stage / "exercises", data["steps"], stage / "notebooks")
    (stage / "README.md").write_text(readme(data["title"], data["modules"], len(public_steps), public_points, python),
                                     encoding="utf-8")
    shutil.copyfile(Path(__file__).with_name("torch_cpu.py"), stage / "install_torch.py")
    (stage / "requirements.txt").write_text(
        requirements_txt(pins, "grade check for the attention exercises: pip install -r requirements.txt"),
        encoding="utf-8")
    (stage / "pyproject.toml").write_text(pyproject(__version__, pins, packages, python), encoding="utf-8")
    check_no_leak(stage, root / course.solutions, (root / course.suites).resolve())
    return {"files": sum(1 for p in stage.rglob("*") if p.is_file()), "cases": len(data["cases"])}


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def build_release(out: Path, course_file: Path = Path("course.yml"), zip_path: Path | None = None) -> dict:
    """Write the bundle to ``out`` (replacing a previous bundle there) and its zip; return a summary."""
    out, course_file = Path(out).resolve(), Path(course_file).resolve()
    if out == PACKAGE_DIR.parent or out in PACKAGE_DIR.parents or out in (course_file.parent, *course_file.parents):
        raise ReleaseError(f"{out} holds the instructor's repository; choose an empty folder for --out")
    if out.exists() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ReleaseError(f"{out} exists and is not a bundle built by grade release; choose an empty folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        summary = _stage(stage, course_file)
        (stage / MARKER).write_text("built by grade release; the next build replaces this folder\n")
        os.chmod(stage, 0o777 & ~_umask())  # mkdtemp made it 0700: the bundle is for sharing
        if out.exists():
            shutil.rmtree(out)
        stage.replace(out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    zip_path = Path(zip_path) if zip_path else out.parent / f"{out.name}.zip"
    entries = [(name, path) for name, path in tree_entries(out, f"{out.name}/") if path.name != MARKER]
    write_zip(zip_path, entries)
    return {**summary, "out": out, "zip": zip_path.resolve()}
