"""Run one submission's steps, each in its own worker, with stand-ins for the other steps.

A worker imports a module when the first of its steps comes (and what that module imports), never before: a module
that does not import costs its own steps, a module whose own code runs out of time costs its own steps (said once, as
its own; the next module gets a fresh worker), and the modules importing a module that does not import are graded
beside stand-ins of what it should have provided (``worker/submission.py``). A clean worker goes on to the next
module's steps (``hygiene.py``; not one that holds much memory or printed much: that would reach the next module). A
module read from a notebook runs cell by cell, past a cell that raises; each failing cell is a worker's claim
(``cell_errors``), which can only cost that student points, and every place in a notebook's module is said as the
notebook's cell (``intake/staged_cells.py``), never as the staged file's line."""
from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from autograder.sandbox import argument_buffer, uids
from autograder.sandbox.host import PROTOCOL, WorkerError
from autograder.sandbox.per_request import PerRequest
from autograder.worker import limits as worker_limits, tempdirs
from autograder.worker.wire import STARTED
from autograder.worker.errors import error, failed
from autograder.sandbox import answers
from autograder.intake import staged_cells

from .dependencies import StandinPolicy
from .own_source import OwnSource


#: the host's own timer ends a sandbox this long after the submission's budget, whatever the trusted side does
WALL_MARGIN = 30.0


def _control(worker, message: dict | None) -> dict:
    """A control request's answer (hello, step, stand-ins), checked: anything else breaks the protocol."""
    answer = worker.request(message)
    if type(answer) is not dict or type(answer.get("changed", [])) is not list \
            or type(answer.get("import_errors", {})) is not dict or type(answer.get("cell_errors", {})) is not dict:
        worker.kill()
        raise WorkerError(PROTOCOL)
    answer.setdefault("changed", [])
    answer.setdefault("import_errors", {})
    answer.setdefault("cell_errors", {})
    return answer


class GraderFault(RuntimeError):
    """The grader's own sandbox failed, before any of the student's code ran: the instructor's to fix
    (grader_errors.log), never the student's to read as their fault."""


def limit_error(exc: WorkerError) -> dict:
    """What the trusted side saw end a step (its deadline, the worker's exit status, a broken protocol), as a kind
    of problem in its own words: ``kind`` is set only here and in staging, never taken from a worker."""
    kind = "limit" if exc.limit else "protocol" if exc.reason == PROTOCOL else "died"
    return failed({**error("LimitExceeded" if exc.limit else "WorkerDied", exc.reason), "kind": kind},
                  "the step", limit=exc.limit)


def asked_standins(value) -> set[str]:
    """Steps whose stand-ins a request builds (``{"$module": {"target": ..., "standin": true}}``)."""
    found: set[str] = set()
    if isinstance(value, dict):
        spec = value.get("$module")
        if isinstance(spec, dict) and spec.get("standin"):
            found.add(spec["target"])
        if value.get("standin") and isinstance(value.get("target"), str):
            found.add(value["target"])
        for item in value.values():
            found |= asked_standins(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found |= asked_standins(item)
    return found


def _import_error(errors: dict[str, dict], module: str, named: str | None = None) -> dict:
    """A module that did not import: staging's own finding (its ``kind``), or the error the worker reported while
    importing it, the student's own. ``named``: how the student knows the module (its file, by default)."""
    found = errors[module]
    doing = f"importing {named or module + '.py'}"
    if found.get("kind") == "staging":
        return failed(found, doing, **{"import": True})
    return failed(answers.student_error(found, doing), doing, **{"import": True})


#: what a student reads when their module's own code (a notebook's cell that trains, a loop at the top level) used
#: up the time of the first step that imported it: every step of that module loses its points, the others are graded
MODULE_TIME = ("the time limit of {budget:g} s was hit while {named} ran its own code, before any of its steps could "
               "be graded: your code was {at} (a cell that trains or loops for long?); each step of {module} loses its "
               "points, and the other modules are graded as usual")


#: the longest student line shown under an error
LINE_CHARS = 200


def student_line(folder: Path, where: dict, read: dict[str, list[str] | None] | None = None) -> dict:
    """``where`` with ``source``: the line it names, read on this side from the submission's own file in ``folder``
    (the staged copy), so its digits are the student's own and shown whole even on a hidden count; the worker's
    ``text`` (its claim of that line: a syntax error's) is dropped. Where the worker showed no line, none is. The worker
    chooses only which line of the student's own files is shown, as it chooses the line number already shown beside it.
    ``read``: files read so far (name -> lines)."""
    if "text" not in where:  # the worker showed no line (an exception raised at run time): none is shown
        return where
    out = {k: v for k, v in where.items() if k != "text"}
    name, line = where.get("file"), where.get("line")
    if type(name) is not str or type(line) is not int or line < 1 or Path(name).name != name or \
            not name.endswith(".py"):
        return out
    read = {} if read is None else read
    if name not in read:
        try:
            read[name] = (folder / name).read_bytes()[: 4 * 2**20].decode("utf-8", "replace").splitlines()
        except OSError:
            read[name] = None
    lines = read[name]
    if lines and line <= len(lines) and lines[line - 1].strip():
        out["source"] = lines[line - 1].strip()[:LINE_CHARS]
    return out


def limit_hint(err: dict, limits: dict) -> str | None:
    """The limit a student's error is what Python raises at (``worker/limits.py``), in the kit's words, with the
    course's value; None for any other error. A hint for that student only: never a kind of problem."""
    kind, message = err.get("type"), str(err.get("message") or "")
    if kind == "MemoryError" or "can't allocate memory" in message:
        limit, value = "memory", limits.get("memory_mb") and f" of {limits['memory_mb']:,} MB"
    elif kind == "BlockingIOError" and "Resource temporarily unavailable" in message:
        limit, value = "processes", limits.get("processes") and f" of {limits['processes']:,} processes"
    elif kind == "OSError" and ("[Errno 27]" in message or "File too large" in message):
        limit, value = "output", limits.get("output_mb") and f" of {limits['output_mb']:,} MB"
    else:
        return None
    return worker_limits.sentence(limit, value or "")


def in_trusted_words(err: dict, limits: dict, not_imported: set[str], printed: int, named=None) -> dict:
    """What the trusted side adds to a student's error (``answers.student_error``), in its own words: a step the
    submission does not define, named from the unit's own steps (``missing``, which ``answers.taken`` checked); the
    output limit, where the step's printed output reached it (``printed``: the size of the output file the trusted
    side made for the worker, measured here: a kind of problem); the limit Python's error names (memory, processes),
    as a hint for the student only. ``named(module)``: how the student knows a module (``module.py`` by default)."""
    missing = err.get("missing")
    if missing:
        module, name = missing.split(".", 1)
        said = named(module) if named else f"{module}.py"
        err["hint"] = (f"{said} could not be imported" if module in not_imported else
                       f"{said} defines no {name} (check the spelling, and that it is defined at the top "
                       "level of the module)")
        return err
    output_mb = limits.get("output_mb")
    if output_mb and printed >= output_mb * 2**20:
        err.update(kind="limit", limit="output", hint=OUTPUT_LIMIT.format(mb=output_mb))
        return err
    hint = limit_hint(err, limits)
    if hint:
        err["hint"] = hint
    return err


#: what the student reads when the step's printed output reached the output limit (the trusted side's own measure:
#: the size of the output file it made for the worker)
OUTPUT_LIMIT = "the output limit of {mb:g} MB was hit: your code printed more than the output limit allows"


#: the stand-ins each request builds (a request may build other steps' stand-ins: Exercise 3.1)
_asked = PerRequest(asked_standins)

#: at most this many calls, and this many bytes of them, go to a worker in one batch
BATCH_REQUESTS = 64
BATCH_BYTES = 4 << 20


def plans(sequence: list[tuple[tuple, dict]]) -> dict[int, tuple[list[dict], int]]:
    """The batches a batch of submissions may send: ``sequence`` is every request of a grading in the order it
    was made, each with its count (``(step, count)``, None for a request built afresh each time: it is sent
    alone, and ends a plan); each run of one count's requests is a plan. Keyed by ``id`` of each request (the
    plan keeps the objects alive): (its count's requests, its index among them)."""
    out: dict[int, tuple[list[dict], int]] = {}
    run: list[dict] = []
    for i, (count, request) in enumerate(sequence):
        if count is None:
            continue
        run.append(request)
        if i + 1 == len(sequence) or sequence[i + 1][0] != count:
            out.update((id(r), (run, j)) for j, r in enumerate(run))
            run = []
    return out


class SubmissionRunner:
    """Executes requests for one submission, in its own sandbox: one worker serves step after step while it
    stays clean (a fresh one otherwise). A worker holds stand-ins only for the steps before the graded one that
    dependencies.py allows; it serves a later step only if that step may hold all it already holds.

    ``zygote`` opens the submission's sandbox: the separate zygote of a grader (``sandbox/zygote.py``) or
    ``grade check``'s own process (``sandbox/local_zygote.py``); ``reference``, where the grader holds the reference,
    is the reference worker that answers the stand-ins' calls (``sandbox/reference_server.py``: ``ReferenceWorker``).
    Neither is imported here: ``grade check``, which has no reference, ships neither the separate zygote's client nor
    the reference worker's (tests/unit/test_shipped_folders.py)."""

    def __init__(self, zygote, folder: Path, modules: list[str], standins: dict[str, str],
                 time_limits: dict[str, float], limits: dict | None = None, *, uid_base: int = 0,
                 reference=None,
                 submission_seconds: float | None = None, module_errors: dict | None = None,
                 policy: StandinPolicy | None = None, asked: dict[str, set[str]] | None = None,
                 batches: dict[int, tuple[list[dict], int]] | None = None,
                 notebooks: dict[str, list[str]] | None = None):
        self.zygote = zygote
        self.folder = Path(folder).resolve()
        self.modules = modules
        # step -> "class" or "function": what a stand-in proxy of it is (never its code: that runs in the
        # reference worker, which answers the proxies' calls)
        self.standins = standins if reference is not None else {}
        self.reference = reference
        self.time_limits = time_limits
        self.limits = limits or {}
        # without namespaces, a worker's uid must reach its scratch folder: traversable, not listable
        self.scratch_root = tempdirs.make("grade-scratch-", mode=0o711)
        self.uid_base = uid_base
        self.submission_seconds = submission_seconds
        self.deadline = time.monotonic() + submission_seconds if submission_seconds else None
        self._sandbox = None
        self._step: str | None = None
        self._worker = None
        self._holds: set[str] = set()
        self.policy = policy or StandinPolicy({})
        self.asked = asked or {}
        self.module_errors = module_errors or {}  # found while staging: not UTF-8, a link, a broken notebook
        #: module -> the notebooks it was read from (intake/notebook_effects.py): it runs cell by cell, and its places
        #: are said as its cells
        self.notebooks = notebooks or {}
        self._texts: dict[str, str | None] = {}  # a notebook's staged module, read once to name its cells
        self.import_errors: dict[str, dict] = {}
        #: the student's files as staged, read here: their names, and the lines their warnings and errors point at
        self.own = OwnSource(self.folder, modules)
        #: a notebook's module: each cell that raised while it ran, as the first worker that ran it said (a claim: it
        #: can only cost this student points, and a person's look: grading/failed_cells.py)
        self.cell_errors: dict[str, list[dict]] = {}
        #: module -> what each of its steps answers: the module's own code ran out of a step's whole time
        self.unrunnable: dict[str, dict] = {}
        self._imported: set[str] = set()  # the modules the current worker imported
        self._importing: tuple[str, bool] | None = None  # (module, with a step's whole time) while it imports
        self.output_bytes = 0
        #: a step whose worker was retired (out of time, a broken protocol): its answer, given again;
        #: it gets no second worker
        self.retired: dict[str, dict] = {}
        #: the cases a count will ask for, known before any is run (``plans``): sent to the worker as one batch
        self.batches = batches or {}
        #: the calls of the current batch whose answers are not read yet, in order
        self._pending: list[dict] = []
        #: the submission's files as read here, for the line a student's error points at (``student_line``)
        self._sources: dict[str, list[str] | None] = {}

    def _needed(self, step: str, asked: set[str] = frozenset()) -> set[str]:
        """The stand-ins ``step``'s worker holds: chosen by the reference and the suite, never the student."""
        return {s for s in self.policy.needs(step, self.asked.get(step, set()) | set(asked)) if s in self.standins}

    def _begin(self, step: str, asked: set[str] = frozenset()) -> None:
        """Start ``step``: on the current worker if it is clean and holds nothing the step may not hold."""
        needed = self._needed(step, asked)
        budget = self.time_limits.get(step, 10.0)
        if self.deadline is not None:
            budget = min(budget, self.deadline - time.monotonic())
        worker = self._worker
        module = step.split(".", 1)[0]
        new = module not in self._imported  # its code runs in this step's time, on this worker if it is clean
        if worker is not None and not worker.dead and self._holds <= needed and not (new and self._printed_much()):
            try:
                worker.begin(budget)
                extra = needed - self._holds
                step_message = {"op": "step", "if_clean": True, "cpu_seconds": budget}
                if extra:  # the worker takes on what this step may hold besides, if it is still clean
                    step_message["standins"] = self._code(extra)
                if new:
                    step_message["import"] = module
                    self._importing = (module, budget >= self.time_limits.get(step, 10.0))
                answer = _control(worker, step_message)
                self._importing = None
                if not answer["changed"]:
                    self._take(answer)
                    self._imported.add(module)
                    self._holds |= extra
                    self._step = step
                    self._mark_output()
                    return
            except WorkerError as exc:
                if self._importing is not None and exc.limit == "time":
                    raise  # the module's own code used the step's time: said once for all its steps (``run``)
                self._importing = None
        self._start(step, needed, budget)

    def _printed_much(self) -> bool:
        """Whether the current worker's output file holds a quarter of the output limit: the next module's steps get a
        fresh worker (a worker's output counts against one limit)."""
        try:
            size = self._output.stat().st_size
        except (OSError, AttributeError):
            return False
        return size * 4 >= (self.limits.get("output_mb") or 4) * 2**20

    def _code(self, steps: set[str]) -> dict[str, str]:
        return {s: kind for s, kind in self.standins.items() if s in steps}  # in unit order

    def _start(self, step: str, needed: set[str], budget: float):
        self.close_worker()
        if self._sandbox is None or self._sandbox.dead:
            self._sandbox = self.zygote.open({"folder": str(self.folder), "scratch": str(self.scratch_root / "work"),
                                              "limits": self.limits, **uids.for_students(self.uid_base),
                                              "wall_seconds":
                                                  self.submission_seconds and self.submission_seconds + WALL_MARGIN})
        self._output = self.scratch_root / f"{step}.out"
        # Stand-ins are proxies: their calls come back on the worker's own channel and are answered by the
        # reference worker, for the stand-ins this worker holds only. No reference code reaches the sandbox.
        calls = self.reference.calls_for(lambda: self._holds) if self.reference is not None else None
        refused = sorted(m for m, e in self.module_errors.items() if e.get("type") != "MissingModule")
        self._worker = self._sandbox.spawn({"modules": self.modules, "notebooks": sorted(self.notebooks),
                                            "refused": refused}, self._output, budget, self.submission_seconds,
                                           callbacks=calls)
        self._worker.steps = frozenset(self.time_limits)
        self._worker.place = self.place
        self._holds = set(needed)
        self._step = step
        module = step.split(".", 1)[0]
        self._imported = {module}
        self._started()
        self._take(_control(self._worker, None))
        self._importing = (module, budget >= self.time_limits.get(step, 10.0))
        self._take(_control(self._worker, {"op": "step", "import": module,
                                           **({"standins": self._code(needed)} if needed else {})}))
        self._importing = None
        self._mark_output()

    def _take(self, answer: dict) -> None:
        """What a worker said of the modules it imported: those that did not import (staging's findings stand), the
        warnings their compiling raised (kept where they point at a line of the student's own: ``own_source.py``), and
        each notebook's failing cells (the first worker's word on a module is kept)."""
        self.import_errors.update({m: e for m, e in answer["import_errors"].items() if m in self.modules})
        self.import_errors.update(self.module_errors)
        warned = self.own.verified(answers.warnings_said(answer.get("warnings")))
        self.own.import_warnings = [*self.own.import_warnings,
                                    *(w for w in warned if w not in self.own.import_warnings)]
        for module, found in answer["cell_errors"].items():
            if module in self.notebooks and module not in self.cell_errors and type(found) is list:
                self.cell_errors[module] = [answers.student_error(e, "running the notebook") for e in found[:20]]
                for err in self.cell_errors[module]:
                    self.locate(err)

    def _started(self) -> None:
        """Read the fresh worker's first word, said before any student code ran there (``child.serve``): a worker
        that ends before it failed in the grader's own start, which is no fault of the student's. Out of time
        before it (the submission's total time used up by earlier steps, or a machine too busy) is said as the
        time limit, as any other."""
        try:
            first = self._worker.request()
        except WorkerError as exc:
            if exc.limit == "time":
                raise
            self._worker.kill()
            raise GraderFault(f"the grader's worker failed before the submission was imported: {exc.reason}") from None
        if first != STARTED:  # nothing of the student's has run yet: the grader's own protocol is broken
            self._worker.kill()
            raise GraderFault(f"the grader's worker said {str(first)[:200]!r} before the submission was imported")

    def _mark_output(self) -> None:
        try:
            self._printed_from = (self._output, self._output.stat().st_size)
        except OSError:
            self._printed_from = (self._output, 0)

    def printed(self, limit: int = 4000) -> str:
        """What the current step's code printed so far (the worker flushes after each request), capped."""
        path, start = getattr(self, "_printed_from", (None, 0))
        if path is None:
            return ""
        try:
            with open(path, "rb") as fh:
                fh.seek(start)
                data = fh.read(limit + 1)
        except OSError:
            return ""
        text = data[:limit].decode("utf-8", errors="replace")
        return text + ("\n[... more output cut]" if len(data) > limit else "")

    def run(self, step: str, request: dict) -> dict:
        if step in self.retired:
            return self.retired[step]
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return limit_error(WorkerError("the submission ran out of its total time limit", limit="submission time"))
        module = step.split(".", 1)[0]
        if module in self.module_errors:  # nothing to run: say what staging found
            return _import_error(self.module_errors, module)
        if module in self.unrunnable:  # its own code ran out of a step's whole time once: said, not run again
            return self.unrunnable[module]
        try:
            if self._pending and self._pending[0] is not request:
                self._drop_batch()
            asked = _asked(request)
            if self._step != step or self._worker is None or self._worker.dead:
                self._begin(step, asked)
            elif not self._needed(step, asked) <= self._holds:
                self._start(step, self._needed(step, asked), self._worker.remaining())
            if module in self.import_errors:
                return self._with_own_line(self._located(_import_error(self.import_errors, module, self.named(module))))
            if self._pending:  # sent with an earlier case of its count: its answer is on its way
                self._pending.pop(0)
                answer = self._worker.request()
            else:
                answer = self._send(step, request)
            if answer.get("ok") is not True:
                self._pending = []  # the worker dropped the rest of its batch
                self._said_in_trusted_words(answer["error"])
                self._with_own_line(answer)
            return self.own.annotate(step, answer)
        except WorkerError as exc:
            self._pending = []
            answer = limit_error(exc)
            importing, self._importing = self._importing, None
            if importing is not None and exc.limit == "time" and importing[1]:  # the module's own code, not the step's
                answer = self._module_time(importing[0], exc)
                self.unrunnable[importing[0]] = answer
            if exc.limit == "time" or exc.reason == PROTOCOL:
                self.retired[step] = answer
            return answer

    def _with_own_line(self, answer: dict) -> dict:
        """The line a student's error points at, read here from the submission's own file (``student_line``) in place
        of the worker's copy of it (a claim). Returns ``answer``."""
        err = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(err, dict) and err.get("kind") is None and isinstance(err.get("where"), dict):
            err["where"] = student_line(self.folder, err["where"], self._sources)
        return answer

    def _module_time(self, module: str, exc: WorkerError) -> dict:
        """Every step's answer when ``module``'s own code ran out of the time of the step that imported it."""
        where = getattr(self._worker, "stopped_where", None) if self._worker is not None else None
        message = MODULE_TIME.format(budget=self._worker.budget if self._worker is not None else 0,
                                     named=self.named(module), at=f"at {where}" if where else "still running",
                                     module=module)
        return failed({**error("LimitExceeded", message), "kind": "limit"}, "the step", limit="import")

    def named(self, module: str) -> str:
        """How the student knows ``module``: the notebooks it was read from, else its file."""
        return " and ".join(self.notebooks[module]) if self.notebooks.get(module) else f"{module}.py"

    def staged_text(self, module: str) -> str | None:
        if module not in self._texts:
            try:
                self._texts[module] = (self.folder / f"{module}.py").read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                self._texts[module] = None
        return self._texts[module]

    def place(self, where: str) -> str:
        """``file.py, line N, in f`` (a worker's stack, when its time ran out) as the student knows it: for a
        notebook's module, the notebook's cell and its line (``attention.ipynb, code cell 12, line 3, in f``)."""
        found = re.match(r"^(?P<file>[\w.-]+)\.py, line (?P<line>\d+)(?P<rest>.*)$", where or "", re.S)
        if not found or found["file"] not in self.notebooks:
            return where
        cell = self._cell(found["file"], int(found["line"]))
        return cell + found["rest"].replace(", in <module>", "") if cell else where

    def _cell(self, module: str, line: int) -> str | None:
        text = self.staged_text(module)
        return staged_cells.place(text, line) if text is not None else None

    def locate(self, err: dict) -> dict:
        """A student's error whose place is in a notebook's module: the notebook's cell added to its place
        (``where["cell"]``: ``attention.ipynb, code cell 12, line 3``), for the feedback's words (``messages._at``)."""
        where = err.get("where")
        if isinstance(where, dict) and isinstance(where.get("file"), str) and isinstance(where.get("line"), int):
            module = where["file"][:-3] if where["file"].endswith(".py") else None
            if module in self.notebooks:
                cell = self._cell(module, where["line"])
                if cell:
                    where["cell"] = cell
        return err

    def _located(self, answer: dict) -> dict:
        if isinstance(answer.get("error"), dict):
            self.locate(answer["error"])
        return answer

    def _said_in_trusted_words(self, err: dict) -> None:
        in_trusted_words(err, self.limits, set(self.import_errors), self._printed_bytes(), self.named)
        if err.get("missing"):
            err["hint"] = self._failed_definition(err["missing"]) or err["hint"]
        self.locate(err)

    def _failed_definition(self, step: str) -> str | None:
        """For a step a notebook's module lacks: the failing cell that defines it (a syntax error in its own cell), as
        the trusted side reads it in the staged source; None when no failing cell defines it."""
        module, name = step.split(".", 1)
        text = self.staged_text(module) if module in self.notebooks else None
        for err in self.cell_errors.get(module, []) if text else []:
            where = err.get("where") or {}
            line = where.get("line")
            piece = next((p for first, p in reversed(staged_cells.pieces(text))
                          if isinstance(line, int) and first <= line), "")
            if re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", piece, re.M):
                cell = where.get("cell") or self.named(module)
                text = " ".join(str(where.get("text") or "").split())  # a syntax error's own line, as written
                return (f"{name} is not defined: {cell} raised {err.get('type')} ({str(err.get('message'))[:200]})"
                        + (f": {text[:200]}" if text else ""))
        return None

    def _printed_bytes(self) -> int:
        """The size of the worker's output file, if this step printed to it at all (a worker that serves a later
        step keeps its file: one an earlier step filled is not this step's doing)."""
        path, start = getattr(self, "_printed_from", (None, 0))
        try:
            size = path.stat().st_size
        except (OSError, AttributeError):
            return 0
        return size if size > start else 0

    def _send(self, step: str, request: dict) -> dict:
        """Send ``request`` with the cases planned after it in its count that this worker may run as it is (the
        stand-ins they build are held), in one batch; return its answer (the others are read as they are asked)."""
        requests, index = self.batches.get(id(request), ((), 0))
        batch = [request]
        if index < len(requests) and requests[index] is request:
            size = len(argument_buffer.prepared(request).frame)
            for later in requests[index + 1:index + BATCH_REQUESTS]:
                size += len(argument_buffer.prepared(later).frame)
                if size > BATCH_BYTES or not self._needed(step, _asked(later)) <= self._holds:
                    break
                batch.append(later)
        if len(batch) == 1:
            return self._worker.request(request)
        self._pending = batch[1:]
        return self._worker.batch(batch)

    def _drop_batch(self) -> None:
        """The rest of a batch its count no longer asks for (it failed at an earlier case): the answers are read
        and dropped, so the worker is where it would be had they not been sent, less what they changed. No case
        waits for them: a worker that runs out of time, dies or tampers meanwhile is ended, not blamed, and the
        step's next case gets a fresh worker."""
        pending, self._pending = self._pending, []
        try:
            for _ in pending:
                answer = self._worker.request()
                if answer.get("ok") is not True:
                    return  # the worker dropped the rest itself
        except WorkerError:
            pass  # the worker is ended (``exchange`` does it)

    def close_worker(self) -> None:
        self._pending = []
        if self._worker is not None:
            self._worker.close()
            self._worker = None
            self._step = None
            self._imported = set()
            try:
                self.output_bytes += self._output.stat().st_size
            except OSError:
                pass

    def close(self) -> None:
        self.close_worker()
        if self._sandbox is not None:
            self._sandbox.close()
        shutil.rmtree(self.scratch_root, ignore_errors=True)
