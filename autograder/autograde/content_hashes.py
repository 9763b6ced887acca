"""The staged submission's hash: a batch re-run skips a submission graded with the same inputs by the same grader
(the grader's own hash is ``grading/suites/grader_identity.py``)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path


def submission(folder: Path | None, extra: dict) -> str:
    """The staged submission's identity: its files, and what staging found wrong with it."""
    digest = hashlib.sha256(json.dumps(extra, sort_keys=True).encode())
    if folder is not None:
        for path in sorted(folder.iterdir()):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
