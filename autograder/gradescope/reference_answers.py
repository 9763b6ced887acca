"""setup.sh's last step: the course's reference answers, computed once as Gradescope builds the image.

Every run (one per submission, each in a fresh container from that image) then reads them from
``$AUTOGRADER_ROOT/cache/reference-answers-0/`` (grading/suites/stored_answers.py) instead of running the hidden
suites on the reference again (0.3 s of each run). A run on a machine whose CPU kernels differ from the image
builder's computes its own, as before. That folder is root's, mode 0700: the workers run as other uids, or see only
an allow-list.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


def cache_folder(root: Path) -> Path:
    """Where setup.sh keeps them and run_autograder's runs read them."""
    return root / "cache"


def main() -> int:
    root = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    os.environ.setdefault("GRADE_CACHE_DIR", str(cache_folder(root)))
    from autograder.grading.suites.session import Grader  # noqa: PLC0415 - imports torch

    with Grader(root / "source" / "course.yml") as grader:
        grader.warm_cache()
        where = grader.kept_answers
        print(f"reference answers: {len(grader.cache)} cases, " +
              (f"kept in {os.environ['GRADE_CACHE_DIR']}" if where else "not kept (each run computes them)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
