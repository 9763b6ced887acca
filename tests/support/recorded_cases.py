"""Record the public cases of a copy of the course, as ``grade assign`` does, into the copy's own kit folder.

A test that changes a course's solutions, suites or limits grades it only after its public cases are recorded again
(autograder/assign/recorded_from.py: ``grade autograde`` refuses stale ones): here, into
``COURSE_DIR/autograder/check``, never into the kit's own."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

_CODE = ("import sys; from pathlib import Path; from autograder.assign.build import assign; "
         "course = Path(sys.argv[1]); cases = course.parent / 'autograder' / 'check'; cases.mkdir(parents=True, "
         "exist_ok=True); print(assign(course, exercises=course.parent / 'exercises', cases_dir=cases))")


def record(course_file: Path) -> Path:
    """Record ``course_file``'s public cases into its folder's ``autograder/check``; return that folder."""
    done = subprocess.run([sys.executable, "-c", _CODE, str(course_file)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(course_file).parent / "autograder" / "check"
