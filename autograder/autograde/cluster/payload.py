"""What travels with each task: a staged submission's files as bytes, and what the client already knows of it.

The bytes go with the task (no shared staging folder is needed: a node unpacks them into a folder of its
own, with the modes staging gives them). A payload holds only the staged source files, small by
construction (intake/stage.py copies regular source files only, after the archive limits).
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder.intake.stage import Staged
from autograder.autograde.run_policy import RunPolicy


@dataclass
class Payload:
    name: str
    extra: dict  # submission, submitted_at, submission_hash, grader_hash (batch.prepare)
    files: dict[str, bytes] | None  # None: staging found nothing to grade (``problem``)
    notes: list[str] = field(default_factory=list)
    module_errors: dict = field(default_factory=dict)
    problem: str | None = None
    policy: RunPolicy = RunPolicy()  # the run's, checked by the worker against its own zygote
    cause: str | None = None  # why nothing could be graded, as data (Staged.cause)
    beside: list[str] = field(default_factory=list)  # files handed in beside it, not graded (Staged.beside)

    @classmethod
    def pack(cls, job, policy: RunPolicy = RunPolicy()) -> "Payload":
        staged = job.staged
        files = None
        if staged.folder is not None:
            files = {path.name: path.read_bytes() for path in sorted(staged.folder.iterdir()) if path.is_file()}
        return cls(job.source.name, dict(job.extra), files, list(staged.notes), dict(staged.module_errors),
                   staged.problem, policy, staged.cause, list(staged.beside))

    def unpack(self, base: Path) -> Staged:
        """The staged submission again, in a fresh folder under ``base`` (remove it with ``discard``)."""
        folder = None
        if self.files is not None:
            folder = Path(tempfile.mkdtemp(prefix="submission-", dir=base))
            for name, data in self.files.items():
                if "/" in name or name in ("", ".", ".."):
                    raise ValueError(f"{self.name}: a staged file named {name!r}")
                (folder / name).write_bytes(data)
                (folder / name).chmod(0o644)
            folder.chmod(0o755)
        return Staged(self.name, folder, list(self.notes), dict(self.module_errors), self.problem, self.cause,
                      beside=list(self.beside))

    @staticmethod
    def discard(staged: Staged) -> None:
        if staged.folder is not None:
            shutil.rmtree(staged.folder, ignore_errors=True)
