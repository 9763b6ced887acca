"""What a person should look at in one submission, as data: results.json's ``extra_data.problems``.

Each problem is recorded where it is known, never parsed back out of the feedback's words:

- the whole submission not graded: staging's ``Staged.cause`` (intake/stage.py, intake/unzip.py);
- a module not graded: staging's module errors (their ``type``, and ``cause`` for an unreadable file);
- a step that ran out of time or hit a limit, or whose worker died: the trusted side's ``limit_error``
  answers (``LimitExceeded`` with its ``limit``, ``WorkerDied``), seen as the runner returns them;
- a limit the student's own code ran into and raised about (``MemoryError``, fork's ``BlockingIOError``,
  ``OSError`` "File too large" from the output-size limit): the worker's error report;
- tampering: the worker's ``Tampering`` answer (its integrity check);
- the grader's own failures: the counts the plugin recorded as the grader's (``GradingPlugin``).

What the worker reports could be forged by the student's code; a forgery can only put the student on
the list of submissions a person looks at, never take them off it, since time limits, deaths and
staging are seen on the trusted side.
"""
from __future__ import annotations

#: staging's module error types -> Problem.cause
MODULE_CAUSES = {"SymbolicLink": "symlink", "MalformedNotebook": "broken_notebook", "MissingModule": "missing"}
#: errors a worker reports about its own sandbox (time and the other limits, deaths, tampering)
_SANDBOX = ("LimitExceeded", "WorkerDied", "Tampering")


def _message(text, limit: int = 300) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def not_graded(cause: str | None, problem: str) -> list[dict]:
    """The whole submission could not be graded (an empty folder, a corrupt archive...)."""
    return [{"kind": "not_graded", "cause": cause or "unknown", "message": _message(problem)}]


def modules(module_errors: dict[str, dict], steps_by_module: dict[str, list[str]]) -> list[dict]:
    """The modules staging could not use (not UTF-8, a broken notebook, a link, missing)."""
    found = []
    for module, err in sorted(module_errors.items(), key=lambda kv: list(steps_by_module).index(kv[0])
                              if kv[0] in steps_by_module else len(steps_by_module)):
        kind = str(err.get("type"))
        cause = MODULE_CAUSES.get(kind) or str(err.get("cause") or "unreadable")
        found.append({"kind": "module_not_graded", "cause": cause, "module": module,
                      "steps": [s if s.startswith(module + ".") else f"{module}.{s}" for s in steps_by_module.get(module, [])],
                      "message": _message(err.get("message"))})
    return found


def classify(err: dict) -> tuple[str, str | None] | None:
    """(kind, limit) of a worker's or the runner's error report, or None when it is the student's own error."""
    kind, message = str(err.get("type")), str(err.get("message") or "")
    if kind == "LimitExceeded":
        limit = str(err.get("limit") or "")
        return ("timed_out", limit) if limit in ("time", "submission time") else ("limit", limit or None)
    if kind == "WorkerDied":
        return "crashed", None
    if kind == "Tampering":
        return "tampering", None
    if kind == "MemoryError" or "can't allocate memory" in message or "not enough memory" in message.lower():
        return "limit", "memory"
    if kind == "BlockingIOError" and "Resource temporarily unavailable" in message:
        return "limit", "processes"  # fork/clone refused: the process limit
    if kind == "OSError" and ("File too large" in message or "[Errno 27]" in message):
        return "limit", "output"  # the output-size limit (RLIMIT_FSIZE; Python ignores SIGXFSZ)
    return None


class Recorder:
    """Wraps a runner's ``run(step, request)``: notes each sandbox problem once per (kind, limit), with its steps."""

    def __init__(self, run):
        self._run = run
        self.found: dict[tuple, dict] = {}
        #: the grader's own frames where a call into the student's object failed with no frame of theirs
        #: (``worker/submission.py``): the instructor's (grader_errors.log), never the student's
        self.grader_frames: list[str] = []

    def __call__(self, step: str, request: dict) -> dict:
        answer = self._run(step, request)
        err = answer.get("error") if isinstance(answer, dict) and answer.get("ok") is False else None
        if isinstance(err, dict) and str(err.get("type")) not in MODULE_CAUSES and err.get("type") != "UnreadableSource":
            self.note(step, err)
            if err.get("grader_frames"):
                entry = (f"{step} ({err.get('phase', 'the call')}): {err.get('type')}: "
                         f"{_message(err.get('message'), 500)}\n{err['grader_frames']}").rstrip("\n")
                if entry not in self.grader_frames:
                    self.grader_frames.append(entry)
        return answer

    def note(self, step: str, err: dict) -> None:
        how = classify(err)
        if how is None:
            return
        kind, limit = how
        message = _message(err.get("message")) or f"{err.get('type')} (no message)"
        problem = self.found.setdefault((kind, limit), {"kind": kind, "limit": limit, "steps": [], "message": message})
        if step not in problem["steps"]:
            problem["steps"].append(step)

    def problems(self) -> list[dict]:
        return [{k: v for k, v in p.items() if v is not None} for p in self.found.values()]


def grader_errors(counts: list[tuple[str, str]]) -> list[dict]:
    """The counts on which the grader itself failed (a bug in a suite): the instructor's to fix."""
    if not counts:
        return []
    steps = list(dict.fromkeys(step for step, _count in counts))
    return [{"kind": "grader_error", "steps": steps,
             "message": f"the grader itself failed on {len(counts)} count(s); tracebacks in grader_errors.log"}]
