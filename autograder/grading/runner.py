"""Run one submission's steps, each in its own worker, with stand-ins for the other steps."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .workers import WorkerError, Zygote


def limit_error(exc: WorkerError) -> dict:
    return {"ok": False, "error": {"type": "LimitExceeded" if exc.limit else "WorkerDied", "message": exc.reason,
                                   "where": None, "phase": "the step", "not_attempted": False, "limit": exc.limit}}


class SubmissionRunner:
    """Executes requests for one submission; a fresh worker per step, killed when the step is done."""

    def __init__(self, zygote: Zygote, folder: Path, modules: list[str], standin_sources: dict[str, str],
                 time_limits: dict[str, float], limits: dict | None = None):
        self.zygote = zygote
        self.folder = Path(folder).resolve()
        self.modules = modules
        self.standin_sources = standin_sources
        self.time_limits = time_limits
        self.limits = limits or {}
        self.scratch_root = Path(tempfile.mkdtemp(prefix="grade-scratch-"))
        self._step: str | None = None
        self._worker = None
        self.import_errors: dict[str, dict] = {}
        self.output_bytes = 0
        self.timed_out: dict[str, dict] = {}  # a step that used up its time gets no second budget

    def _start(self, step: str):
        self.close_worker()
        scratch = self.scratch_root / step
        sources = {s: src for s, src in self.standin_sources.items() if s != step}
        spawn = {"folder": str(self.folder), "modules": self.modules, "scratch": str(scratch),
                 "standins": sources, "limits": self.limits}
        self._worker = self.zygote.spawn(spawn, self.time_limits.get(step, 10.0))
        self._step = step
        hello = self._worker.request(None)
        self.import_errors = hello.get("import_errors", {})

    def run(self, step: str, request: dict) -> dict:
        if step in self.timed_out:
            return self.timed_out[step]
        try:
            if self._step != step or self._worker is None or self._worker.dead:
                self._start(step)
            module = step.split(".", 1)[0]
            if module in self.import_errors:
                return {"ok": False, "error": {**self.import_errors[module], "phase": f"importing {module}.py",
                                               "not_attempted": False, "import": True}}
            answer = self._worker.request(request)
            self.output_bytes = max(self.output_bytes, answer.get("output_bytes", 0))
            return answer
        except WorkerError as exc:
            answer = limit_error(exc)
            if exc.limit == "time":
                self.timed_out[step] = answer
            return answer

    def close_worker(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None
            self._step = None

    def close(self) -> None:
        self.close_worker()
        shutil.rmtree(self.scratch_root, ignore_errors=True)
