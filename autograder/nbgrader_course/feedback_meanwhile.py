"""Each student's ``autograded/`` notebooks, built while the rest of the class is graded, and put in place only once
nbgrader's gradebook has taken the class's grades.

``grade autograde --nbgrader`` writes the feedback notebooks (``nbgrader_gradebook.feedback_notebooks``) after the
gradebook commit. Built then, a 32-student class's 128 notebooks are a second of one core's work at the end of the
run, with the other core idle; meanwhile, the batch process only waits on its jobs. So each student's notebooks are
built here as their results.json comes in, into a folder of the course's own (``.grade-autograded/`` beside
``autograded/``, on the same filesystem: a folder of this run's there, ``tempdirs``' kind, which the next run
sweeps away if this one is killed); the write-back moves each into ``autograded/<student>/<assignment>/`` after the
commit (a rename). A gradebook that refuses the grades leaves ``autograded/`` as it was, as before; so does an
interrupted run, and a run where nbgrader cannot be imported. Students skipped as graded by an earlier run, any
whose notebooks could not be built here, a course folder where no folder of ours can be made or renamed from, and
a run on Dask (whose client imports no nbgrader meanwhile) are built at the write-back, as before.
"""
from __future__ import annotations

import contextlib
import importlib.util
import shutil
from pathlib import Path

from autograder.intake.discover import Source
from autograder.worker import tempdirs

#: where a run builds its students' notebooks, in the course folder: one folder of each run's inside (``tempdirs``)
STAGING = ".grade-autograded"


class FeedbackMeanwhile:
    """The feedback notebooks of an nbgrader course's students, built as each is graded (``add``), moved into
    ``autograded/`` by the write-back (``take``), the rest removed (``close``)."""

    def __init__(self, course_dir: Path, sources: list[Source], out: Path):
        self.course_dir = Path(course_dir)
        self.sources = {source.name: source for source in sources}
        self.assignment = sources[0].path.name if sources else ""
        self.out = out
        self.staging: Path | None = None
        self.built: dict[str, dict] = {}  # student -> the results.json its notebooks were built from
        # without nbgrader, the write-back writes no notebooks (it says the gradebook was not updated): none built
        self.usable = bool(sources) and _installed("nbgrader")

    def add(self, name: str) -> None:
        """Build ``name``'s notebooks from its results.json, just written by its job. Never raises: a student whose
        notebooks could not be built here is built at the write-back, which says why if it fails there too."""
        source = self.sources.get(name)
        if not self.usable or source is None:
            return
        try:
            from autograder.outputs.results import read

            from .nbgrader_gradebook import feedback_notebooks

            if self.staging is None:
                try:
                    (self.course_dir / STAGING).mkdir(exist_ok=True)
                    self.staging = tempdirs.make("meanwhile-", base=str(self.course_dir / STAGING))
                except OSError:  # no folder of ours can be made there: all are built at the write-back
                    self.usable = False
                    return
            result = read(self.out / name / "results.json").as_json()
            feedback_notebooks(self.course_dir, self.assignment, name, source.path, result, into=self.staging)
        except Exception:  # noqa: BLE001 - built again at the write-back, whose errors are said
            return
        self.built[name] = result

    def take(self, name: str, result: dict) -> None:
        """``autograded/<name>/<assignment>/``: the notebooks built meanwhile from this very ``result``, moved in;
        else built now."""
        from .nbgrader_gradebook import feedback_notebooks

        built = self.staging / name / self.assignment if self.staging is not None and name in self.built else None
        if built is not None and built.is_dir() and self.built[name] == result:
            dest = self.course_dir / "autograded" / name / self.assignment
            if dest.exists():
                shutil.rmtree(dest)
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                built.rename(dest)
                return
            except OSError:  # autograded/ on another filesystem (a link, a mount): built there, as without this class
                pass
        feedback_notebooks(self.course_dir, self.assignment, name, self.sources[name].path, result)

    def close(self) -> None:
        """Remove what was built and not taken (an interrupted run, a gradebook that refused the grades), and what
        a run killed meanwhile left (swept whether or not this run built anything)."""
        if self.staging is not None:
            tempdirs.remove(self.staging)
            self.staging = None
        self.built.clear()
        parent = self.course_dir / STAGING
        if parent.is_dir():
            with contextlib.suppress(OSError):  # a filesystem without locks: left for a run that can tell
                tempdirs.sweep("meanwhile-", str(parent))
            with contextlib.suppress(OSError):  # another run's may still be there
                parent.rmdir()


def _installed(name: str) -> bool:
    """Whether ``name`` can be imported here, without importing it."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, a broken parent package
        return False
