"""What the public cases were recorded from, and the refusal to ship or grade when that is not what is there now.

``grade assign`` records the public cases (``check/public_cases.json``) by running the suites' public counts on the
reference solutions, with course.yml's points, visibility, tolerances and limits. A change to any of those after it
leaves the recorded cases stale: the student bundle's ``grade check`` would check the old answers and say ``54/54``
where grading gives ``79/81``. So ``grade assign`` writes beside the cases a digest of each source (``recorded_from``:
the solutions, the hidden suites, course.yml's grading content), and ``grade release``, ``grade gradescope``, ``grade
nbgrader`` and ``grade autograde`` compare it with the sources now and refuse, with the command to run, when one
differs (tests/integration/test_recorded_from.py, with the control: after ``grade assign`` each goes ahead).

The digest is of the files' bytes (line endings made one), named relative to their own folder, so a copy of the kit
elsewhere has the same digest; course.yml counts by its parsed content, less what no public case depends on (the late
policy, the LTI settings, where the folders are, Gradescope's visibility of hidden counts).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from autograder.check import public_cases
from autograder.course import CourseError, load_course
from autograder.usage import UsageError

KEY = "recorded_from"
#: course.yml's keys no public case depends on
_NOT_RECORDED = {"late_policy": True, "lti": True, "solutions": True, "exercises": True, "suites": True,
                 "defaults": {"hidden_visibility"}}


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts)
                  and not p.name.endswith((".pyc", ".pyo")))


def _folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in _files(folder):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return digest.hexdigest()[:16]


def sources(course_file: Path, course=None) -> dict[str, str]:
    """The digest of each source the public cases are recorded from: ``solutions``, ``suites``, ``course``."""
    course_file = Path(course_file).resolve()
    course = course or load_course(course_file)
    root = course_file.parent
    content = course.model_dump(mode="json", exclude=_NOT_RECORDED)
    return {"solutions": _folder_digest(root / course.solutions), "suites": _folder_digest(root / course.suites),
            "course": hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]}


def cases_folder(course_file: Path) -> Path:
    """Where the public cases of ``course_file`` are: the kit beside it (its ``autograder/check``) when it has them or
    is a kit (``autograder/cli.py``), else the running kit's own."""
    root = Path(course_file).resolve().parent
    own = root / "autograder" / "check"
    if (own / public_cases.JSON_FILE).is_file() or (root / "autograder" / "cli.py").is_file():
        return own
    return public_cases.HERE


def recorded(folder: Path) -> dict | None:
    """The digests the public cases in ``folder`` were recorded with, or None (none there, or recorded before)."""
    try:
        data = json.loads((Path(folder) / public_cases.JSON_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found = data.get(KEY) if isinstance(data, dict) else None
    return found if isinstance(found, dict) else None


def stamp(folder: Path, digests: dict[str, str]) -> None:
    """Write ``digests`` into the public cases of ``folder`` (their json only: the cases themselves are kept)."""
    path = Path(folder) / public_cases.JSON_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get(KEY) == digests:
        return
    data[KEY] = digests
    path.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")


def assign_command(course_file: Path) -> str:
    given = Path(course_file)
    default = given.name == "course.yml" and given.resolve().parent == Path.cwd().resolve()
    return "grade assign" if default else f"grade assign --course {given}"


def refusal(course_file: Path, course=None, folder: Path | None = None, then: str = "") -> str | None:
    """Why the public cases of ``course_file`` may not ship or grade as they are (and the command to run), or None
    when they were recorded from the sources there now. ``then``: what to run after it, said with it."""
    folder = folder or cases_folder(course_file)
    had = recorded(folder)
    now = sources(course_file, course)
    run = f"run `{assign_command(course_file)}`" + (f", then {then}" if then else "")
    if not (folder / public_cases.JSON_FILE).is_file():
        return f"no public checks in {folder}: {run}"
    if had is None:
        return (f"the public checks in {folder} do not say what they were recorded from (recorded by an older grade "
                f"assign): {run}, so that what students check is what is graded")
    changed = [name for name in ("solutions", "suites", "course") if had.get(name) != now[name]]
    if not changed:
        return None
    what = {"solutions": "the solutions", "suites": "the hidden suites", "course": "course.yml"}
    return (f"the public checks in {folder} were recorded before the last change to "
            f"{' and '.join(what[c] for c in changed)}: {run}, so that what students check is what is graded")


def refuse_if_stale(course_file: Path, then: str, undone: str) -> None:
    """A verb's first step, before it loads torch: a ``UsageError`` saying ``refusal`` (and that ``undone``: "nothing
    was graded") when the public cases of ``course_file`` are stale, or the course's own error when it cannot load."""
    try:
        stale = refusal(course_file, then=then)
    except CourseError as exc:
        raise UsageError(str(exc)) from None
    if stale:
        raise UsageError(f"{stale}; {undone}")
