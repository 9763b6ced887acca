"""The grader's identity: one hash of everything that decides a grade (``Grader.identity``).

It covers course.yml, the reference, the hidden suites, the grading code and torch's version. A batch re-run skips a
submission graded by the same grader (tests/integration/test_batch.py); the stored reference answers are kept per grader
(tests/integration/test_stored_answers.py); a cluster worker whose grader differs from the client's is refused
(``autograde/cluster/warm_grader.py``).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import torch

GRADER_CODE = Path(__file__).resolve().parents[2]  # autograder/: the whole package


def _files(folder: Path, pattern: str) -> list[Path]:
    return sorted(p for p in folder.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts)


def grader_hash(course_file: Path, course) -> str:
    """The grader's identity: course.yml, reference, hidden suites, the grading code, torch's version."""
    root = course_file.parent
    digest = hashlib.sha256(f"torch {torch.__version__}\n".encode())
    paths = [course_file, *_files(root / course.solutions, "*.py"), *_files(root / course.suites, "*"),
             *_files(GRADER_CODE, "*.py")]
    for path in paths:
        digest.update(str(path.relative_to(root) if path.is_relative_to(root) else path.name).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
