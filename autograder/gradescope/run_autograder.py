"""Inside Gradescope: grade the submission into ``results/results.json``, whatever happens.

Run by ``run_autograder`` as ``python -m autograder.gradescope.run_autograder``. Standard library only, so it
still writes a results.json when torch or the kit cannot even be imported. Gradescope puts the
uploaded files straight in ``submission/``; students sometimes upload a folder (or a zip of one), so
the submission is the shallowest folder that holds one of the unit's modules.

Environment: ``AUTOGRADER_ROOT`` (default ``/autograder``), ``AUTOGRADER_TIMEOUT`` (seconds for the
whole grading, default 540: under Gradescope's default limit of 10 minutes, so a hang still gets a
results.json).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from . import reference_answers  # standard library only, as this module

SKIP_DIRS = {"__MACOSX", "__pycache__"}
DEFAULT_TIMEOUT = 540.0
ASK = "Your submission was not graded: please tell your instructor."


def unit_modules(source: Path) -> list[str]:
    return sorted(p.stem for p in (source / "solutions").glob("*.py") if p.stem != "__init__")


def locate(submission: Path, modules: list[str]) -> Path | None:
    """What to grade, as ``grade autograde`` takes it: the shallowest folder under ``submission`` (itself
    included) holding one of ``modules`` (as .py or .ipynb) or a notebook, else the one .zip uploaded."""
    level = [submission]
    while level:
        for folder in level:
            if any((folder / f"{m}.py").is_file() or (folder / f"{m}.ipynb").is_file() for m in modules) \
                    or any(folder.glob("*.ipynb")):
                return folder
            zips = sorted(p for p in folder.glob("*.zip") if p.is_file() and not p.is_symlink())
            if len(zips) == 1:
                return zips[0]
        level = sorted(child for folder in level for child in folder.iterdir()
                       if child.is_dir() and not child.is_symlink() and not child.name.startswith(".")
                       and child.name not in SKIP_DIRS)
    return None


def failure(message: str, started: float) -> dict:
    return {"score": 0.0, "execution_time": round(time.monotonic() - started, 3), "output": message,
            "visibility": "visible", "stdout_visibility": "hidden", "tests": []}


def submitted_at(root: Path) -> str | None:
    """When Gradescope says the student submitted (``submission_metadata.json``'s ``created_at``)."""
    try:
        return str(json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))["created_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def grade(source: Path, folder: Path, timeout: float, started: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="gradescope-results-") as tmp:
        out = Path(tmp) / "results"
        env = {"GRADE_CACHE_DIR": str(reference_answers.cache_folder(source.parent)),  # as setup.sh computed them
               **os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")]))}
        cmd = [sys.executable, "-m", "autograder.cli", "autograde", str(folder), "--out", str(out),
               "--course", str(source / "course.yml")]
        created = submitted_at(source.parent)
        if created:  # the platform's own record, beside (never inside) the submission
            times = out.parent / "times.csv"
            times.write_text(f"submission,submitted_at\n*,{created}\n", encoding="utf-8")  # this run's one submission
            cmd += ["--times", str(times)]
        try:
            done = subprocess.run(cmd, cwd=source, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return failure(f"Grading took longer than {timeout:g} s and was stopped. {ASK}", started)
        print(done.stdout, end="")
        print(done.stderr, end="", file=sys.stderr)
        found = sorted(out.glob("*/results.json"))
        if len(found) != 1:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            return failure(f"The autograder failed (exit {done.returncode}: {last}). {ASK}", started)
        return json.loads(found[0].read_text(encoding="utf-8"))


def write(dest: Path, result: dict) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, dest)


def main() -> int:
    started = time.monotonic()
    root = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    print(f"kit: {Path(__file__).resolve().parent.parent}; python: {sys.executable}", flush=True)
    source, submission, dest = root / "source", root / "submission", root / "results" / "results.json"
    try:
        modules = unit_modules(source)
        folder = locate(submission, modules) if submission.is_dir() else None
        if folder is None:
            names = ", ".join(f"{m}.py" for m in modules)
            result = failure(f"None of the exercise files ({names}, or the notebooks of the same names) is in your "
                             "submission. Upload them as they are, without renaming them, or as one .zip.", started)
        else:
            result = grade(source, folder, float(os.environ.get("AUTOGRADER_TIMEOUT", DEFAULT_TIMEOUT)), started)
    except Exception as exc:  # noqa: BLE001 - whatever happens, Gradescope gets a results.json
        traceback.print_exc()
        result = failure(f"The autograder failed ({type(exc).__name__}: {exc}). {ASK}", started)
    write(dest, result)
    print(f"score {result.get('score')}; results in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
