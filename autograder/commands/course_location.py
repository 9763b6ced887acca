"""Which course.yml a verb uses when ``--course`` is not given, and the record that makes an nbgrader course find it.

``grade nbgrader --course-dir DIR`` writes ``DIR/.attention-kit.yml``: the absolute paths of the course.yml it
was generated from and of the kit's folder. A verb run without ``--course`` takes ``./course.yml`` when there
is one (the kit's own folder), else the course recorded in the nbgrader course it was given (``--nbgrader
DIR``), else the one recorded in the current folder: so ``cd ~/attention-course && grade autograde --nbgrader .
--out results`` grades with the course that wrote the notebooks. An explicit ``--course FILE`` always wins.
"""
from __future__ import annotations

from pathlib import Path

from autograder.usage import UsageError


RECORD = ".attention-kit.yml"
DEFAULT = Path("course.yml")


def write_record(course_dir: Path, course_file: Path) -> Path:
    """Write ``course_dir/.attention-kit.yml`` naming ``course_file`` (absolute) and the kit's folder."""
    import yaml

    course_file = Path(course_file).resolve()
    path = Path(course_dir) / RECORD
    text = ("# Written by `grade nbgrader`: the kit this nbgrader course was generated from. `grade` commands run\n"
            "# in this folder without --course use this course.yml (grade autograde --nbgrader . --out results).\n"
            "# Edit it if the kit moves; --course FILE overrides it.\n")
    text += yaml.safe_dump({"course": str(course_file), "kit": str(course_file.parent)}, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def read_record(folder: Path) -> Path | None:
    """The course.yml recorded in ``folder/.attention-kit.yml``, or None when there is no record."""
    import yaml

    path = Path(folder) / RECORD
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        course = Path(data["course"])
    except (OSError, ValueError, yaml.YAMLError, TypeError, KeyError) as exc:
        raise UsageError(f"{path}: not a record written by grade nbgrader ({exc}); delete it, or pass "
                         "--course PATH/TO/course.yml") from None
    if not course.is_file():
        raise UsageError(f"{path} names {course}, which is not there (has the kit moved?): edit its `course:` "
                         "line, or pass --course PATH/TO/course.yml")
    return course


def resolve(course_file: Path | None, explicit: bool, nbgrader_dir: Path | None = None,
            course_dir_option: bool = False) -> tuple[Path, str | None]:
    """The course.yml to use, and a note saying where it came from when it is not the obvious one.

    ``explicit``: ``--course`` was given. ``course_dir_option``: the verb also takes ``--course-dir`` (grade
    nbgrader), which a folder given to ``--course`` was probably meant for."""
    if explicit:
        course_file = Path(course_file)
        if course_file.is_dir():
            inside = course_file / "course.yml"
            hint = f" (did you mean --course {inside}?)" if inside.is_file() else ""
            if course_dir_option:
                hint += f"; the nbgrader course folder to write is --course-dir {course_file}"
            raise UsageError(f"--course {course_file}: a folder; --course names the course definition file, "
                             f"course.yml{hint}")
        return course_file, None
    if DEFAULT.is_file():
        return DEFAULT, None
    for folder in ([nbgrader_dir] if nbgrader_dir else []) + [Path(".")]:
        recorded = read_record(folder)
        if recorded is not None:
            return recorded, f"course: {recorded} (recorded in {Path(folder) / RECORD} by grade nbgrader)"
    raise UsageError(f"course.yml: file not found in {Path.cwd()} (the course definition is needed): run this "
                     "from the kit's folder, or pass --course PATH/TO/course.yml")
