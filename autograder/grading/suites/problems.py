"""What a person should look at in one submission, as data: results.json's ``extra_data.problems``.

Each problem is recorded where the trusted side saw it, never parsed back out of words, and never taken from what a
worker says (a worker runs the student's code: its answers are the student's to write, ``sandbox/answers.py``):

- the whole submission not graded: staging's ``Staged.cause`` (intake/stage.py, intake/unzip.py);
- a module not graded: staging's module errors (their ``type``, and ``cause`` for an unreadable file);
- a step that ran out of time (its module's own code, ``import``, once for all its steps), hit a limit the trusted
  side measured (the output file's size), or whose worker died or broke the protocol: the trusted side's own errors
  (``kind``: ``limit`` with its ``limit``, ``died``, ``protocol``: ``grading/runner.py``), seen as the runner returns
  them;
- a notebook's cell that raised where it changed what was graded (``grading/failed_cells.py``);
- the grader's own failures: the counts the plugin recorded as the grader's (``GradingPlugin``).

A problem names its kind, its limit and its steps, in the kit's own words: the instructor's summary never carries
a student's text (an exception's message, a class name), which the student's code chooses.
"""
from __future__ import annotations

import ast
from pathlib import Path

#: staging's module error types -> Problem.cause
MODULE_CAUSES = {"SymbolicLink": "symlink", "MalformedNotebook": "broken_notebook", "MissingModule": "missing"}

#: what each kind of problem is, said once in the instructor's list
SENTENCES = {
    ("timed_out", "time"): "ran out of its time limit",
    ("timed_out", "submission time"): "ran out of the submission's total time limit",
    ("timed_out", "import"): "ran out of its time limit while its module's own code ran (a cell that trains, a loop at "
                             "the top level), before any of its steps could be graded",
    ("limit", "output"): "printed more than the output limit allows",
    ("limit", "memory"): "was killed at the memory limit",
    ("limit", "processes"): "hit the process limit",
    ("crashed", None): "ended its worker process (a crash, or an exit)",
    ("protocol", None): "wrote its own messages on the grader's channel: the step's answers were not taken",
}


def _message(text, limit: int = 300) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def not_graded(cause: str | None, problem: str) -> list[dict]:
    """The whole submission could not be graded (an empty folder, a corrupt archive...): staging's own sentence."""
    return [{"kind": "not_graded", "cause": cause or "unknown", "message": _message(problem)}]


def modules(module_errors: dict[str, dict], steps_by_module: dict[str, list[str]],
            blocked: dict[str, list[str]] | None = None) -> list[dict]:
    """The modules staging could not use (not UTF-8, a broken notebook, a link, missing): staging's own sentences.

    ``blocked``: module -> the steps of other modules that score zero because they import it (``importers``), which
    the problem costs too; ``near_miss``: the file that was most likely meant to be the module (intake/near_miss.py)."""
    found = []
    for module, err in sorted(module_errors.items(), key=lambda kv: list(steps_by_module).index(kv[0])
                              if kv[0] in steps_by_module else len(steps_by_module)):
        kind = str(err.get("type"))
        cause = MODULE_CAUSES.get(kind) or str(err.get("cause") or "unreadable")
        steps = [s if s.startswith(module + ".") else f"{module}.{s}" for s in steps_by_module.get(module, [])]
        problem = {"kind": "module_not_graded", "cause": cause, "module": module,
                   "steps": [*steps, *(s for s in (blocked or {}).get(module, []) if s not in steps)],
                   "message": _message(err.get("message"))}
        if type(err.get("near_miss")) is str:
            problem["near_miss"] = err["near_miss"]
        found.append(problem)
    return found


def beside(files: list[str]) -> list[dict]:
    """Files handed in beside the code under its name that are not graded (a note): for a person to read."""
    return [{"kind": "beside", "files": list(files),
             "message": _message(f"handed in beside the code, not graded: {', '.join(files)}")}] if files else []


def importers(folder, modules: list[str]) -> dict[str, set[str]]:
    """module -> the staged modules that import it (``from .m import``, ``from m import``, ``import m``), directly or
    through another: read from the staged files on this side (parsed, never run), never from what a worker says."""
    direct: dict[str, set[str]] = {m: set() for m in modules}
    for module in modules:
        try:
            tree = ast.parse((Path(folder) / f"{module}.py").read_bytes())
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):  # from .causal_attention import ...; from . import causal_attention
                names = [node.module] if node.module else [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                target = parts[1] if parts[0] == "submission" and len(parts) > 1 else parts[0]
                if target in direct and target != module:
                    direct[target].add(module)
    found: dict[str, set[str]] = {}
    for module in modules:
        seen, todo = set(), list(direct[module])
        while todo:
            other = todo.pop()
            if other not in seen:
                seen.add(other)
                todo += direct.get(other, set())
        found[module] = seen
    return found


def classify(err: dict) -> tuple[str, str | None] | None:
    """(kind, limit) of an error the trusted side made itself (its ``kind``), or None: the student's own error."""
    kind = err.get("kind")
    if kind == "limit":
        limit = str(err.get("limit") or "")
        return ("timed_out", limit) if limit in ("time", "submission time", "import") else ("limit", limit or None)
    if kind == "died":
        return "crashed", None
    if kind == "protocol":
        return "protocol", None
    return None


class Recorder:
    """Wraps a runner's ``run(step, request)``: notes each problem the trusted side saw once per (kind, limit), with
    its steps."""

    def __init__(self, run):
        self._run = run
        self.found: dict[tuple, dict] = {}

    def __call__(self, step: str, request: dict) -> dict:
        answer = self._run(step, request)
        err = answer.get("error") if isinstance(answer, dict) and answer.get("ok") is False else None
        if isinstance(err, dict):
            self.note(step, err)
        return answer

    def note(self, step: str, err: dict) -> None:
        how = classify(err)
        if how is None:
            return
        kind, limit = how
        message = SENTENCES.get((kind, limit), f"hit the {limit} limit" if limit else kind)
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
