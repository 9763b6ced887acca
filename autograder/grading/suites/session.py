"""A grading session: course, reference and zygote loaded once, then one submission after another."""
from __future__ import annotations

import functools
import gc
import time
from pathlib import Path

import torch

from autograder.course import CourseError, load_course
from autograder.grading.suites import proxied_functions
from autograder.grading import failed_cells
from autograder.grading.dependencies import StandinPolicy
from autograder.grading.suites.reference import Reference
from autograder.intake import notebook_effects
from autograder.sandbox.reference_server import ReferenceWorker
from autograder.sandbox.standin_answers import StandinAnswers
from autograder.grading.runner import SubmissionRunner, asked_standins, plans
from autograder.sandbox.zygote import Zygote

from . import direct, gradescope_results, problems, stored_answers
from .grader_identity import grader_hash
from .graded import SuiteRun
from .plugin import PASSED, GradingPlugin
from .suite_runner import run_suites, validate_suites


def _own_lines(folder: Path) -> set[str]:
    """The student's own lines (whitespace-normalized), in the staged submission's source files."""
    lines: set[str] = set()
    for path in Path(folder).glob("*.py"):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines.update(" ".join(line.split()) for line in text.splitlines())
    return lines


class Grader:
    def __init__(self, course_file: Path | str):
        # Reference answers are small: one thread, and no OpenMP pool that a forked batch job would inherit broken.
        torch.set_num_threads(1)
        course_file = Path(course_file).resolve()
        self.course_file = course_file
        self.course = load_course(course_file)
        self.root = course_file.parent
        self.suites = (self.root / self.course.suites).resolve()
        try:
            self.reference = Reference(self.root / self.course.solutions, self.course.modules, list(self.course.steps))
        except (FileNotFoundError, LookupError, ImportError, SyntaxError) as exc:
            raise CourseError(f"cannot load the reference solutions: {exc}") from None
        #: the hidden tests as direct calls (one pytest collection for the whole batch), or None: pytest.main
        self.tests = direct.plan(self.suites, validate_suites(self.course, self.suites, self.reference))
        self.standin_kinds = self.reference.standin_kinds()
        self.policy = StandinPolicy(self.reference.uses(), list(self.course.steps))
        # steps graded after the others: those whose workers hold stand-ins (every step after the unit's first:
        # a worker's stand-ins only grow along the unit's order, so one clean worker serves step after step)
        self.late_steps = {s for s in self.course.steps if self.policy.needs(s)}
        self.reference_lines = self.reference.body_lines()
        self.uid_base = 0  # the zygote's uid block, once there is one
        self._zygote: Zygote | None = None  # started on first use; forked batch jobs start their own
        self._reference_worker: ReferenceWorker | None = None  # runs the stand-ins' code, started on first use
        self.cache: dict = {}  # reference answers, shared by every submission of the batch
        self.asked: dict[str, set[str]] = {}  # per step: the stand-ins its requests build (Exercise 3.1)
        self.batches: dict = {}  # each count's requests, in the order its cases ask for them (runner.plans)
        self.kept_answers: Path | None = None  # the file that keeps the reference answers for the next run, if any
        self.kept_standins: list[tuple[bytes, bytes]] = []  # the stand-ins' answers an earlier batch kept

    @functools.cached_property
    def identity(self) -> str:
        """The grader hash (course.yml, the reference, the hidden suites, the grading code, torch's version), once."""
        return grader_hash(self.course_file, self.course)

    def limits(self) -> dict:
        lim = self.course.limits
        return {"memory_mb": lim.memory_mb, "processes": lim.processes, "output_mb": lim.output_mb}

    def run(self, folder: Path, notes: list[str] | None = None, module_errors: dict | None = None) -> SuiteRun:
        """Run the hidden suites on the staged submission in ``folder``: what they found (``graded.py`` builds
        its results.json and page from it)."""
        start = time.monotonic()
        if not self.cache:  # every submission, the first one included, sees the same requests in the same order
            self.warm_cache()
        times = {step: self.course.step_time(step) for step in self.course.steps}
        runner = SubmissionRunner(self.zygote, folder, self.course.modules, self.standin_kinds, times, self.limits(),
                                  reference=self.reference_worker,
                                  uid_base=self.uid_base, submission_seconds=self.course.limits.submission_seconds,
                                  module_errors=module_errors, policy=self.policy, asked=self.asked,
                                  batches=self.batches, notebooks=notebook_effects.from_notebooks(folder))
        # A line the student wrote is theirs to see, even where the reference has the same line: only text
        # that comes from nowhere in their own files can be a quote of the reference.
        own = _own_lines(folder)
        recorder = problems.Recorder(runner.run)  # timed out, limits, deaths, broken protocols: as data
        plugin = GradingPlugin(self.course, self.reference, recorder, cache=self.cache,
                               reference_lines={line for line in self.reference_lines if line not in own},
                               late_steps=self.late_steps)
        try:
            self._run_tests(plugin)
        finally:
            runner.close()
        plugin.place_warnings()
        notes = [*gradescope_results.unreadable_modules(self.course, plugin.outcomes, module_errors or {}),
                 *(notes or [])]
        lost = {step for (step, _count), outcome in plugin.outcomes.items() if outcome.status != PASSED}
        cell_notes, cell_problems = failed_cells.report(runner.cell_errors, runner.staged_text, runner.named, lost,
                                                        self.course.steps_by_module())
        notes += cell_notes
        if runner.output_bytes:
            notes.append(f"Your code printed {runner.output_bytes} bytes while being graded; printed output is not "
                         "shown here.")
        # what a person should look at (the class summary's list), as data; graded.py adds the identity
        found = [*problems.modules(module_errors or {}, self.course.steps_by_module(),
                                   self._blocked(folder, module_errors or {}, plugin.outcomes)),
                 *recorder.problems(), *cell_problems, *problems.grader_errors(plugin.grader_error_counts)]
        # the grader's own failures (a bug in a suite): for the instructor's log only
        return SuiteRun(plugin.outcomes, notes, found, tuple(plugin.grader_errors),
                        execution_time=time.monotonic() - start)

    def _blocked(self, folder: Path, module_errors: dict, outcomes: dict) -> dict[str, list[str]]:
        """Per module not graded: the steps of the modules that import it (read from the staged files here) that
        score nothing, which that module's problem costs too."""
        if not module_errors:
            return {}
        zero = {step for step in self.course.steps
                if not any(o.status == PASSED for (s, _), o in outcomes.items() if s == step)}
        by_module = self.course.steps_by_module()
        importing = problems.importers(folder, self.course.modules)
        return {module: [f"{other}.{name}" for other in self.course.modules
                         if other in importing.get(module, set()) and other not in module_errors
                         for name in by_module.get(other, []) if f"{other}.{name}" in zero]
                for module in module_errors}

    @property
    def reference_worker(self) -> ReferenceWorker:
        """The handle on the reference worker of this process's zygote (the worker itself starts on first call)."""
        if self._reference_worker is None or self._reference_worker.zygote is not self.zygote:
            self._reference_worker = ReferenceWorker(self.zygote, self.reference.module_sources(),
                                                     list(self.course.steps),
                                                     self.limits())
            self._reference_worker.answers.preload(self.kept_standins)
        return self._reference_worker

    def standins_learned(self) -> list[tuple[bytes, bytes]] | None:
        """The stand-ins' answers this process was given or asked again (least recently used first), if it was given
        any new ones; else None. A batch job's, for ``keep_standins``."""
        worker = self._reference_worker
        return worker.answers.used() if worker is not None and worker.answers.added else None

    def keep_standins(self, learned: list[list[tuple[bytes, bytes]]]) -> None:
        """Keep for the next batch the answers kept before and those its jobs learned (``standins_learned``), the
        jobs' the newest, if they learned any."""
        if learned:
            merged = StandinAnswers(max_bytes=stored_answers.MAX_STANDIN_BYTES)
            for answers in [self.kept_standins, *learned]:
                merged.preload(answers)
            stored_answers.save_standins(self.identity, merged.items())

    @property
    def zygote(self) -> Zygote:
        if self._zygote is None:
            self._zygote = Zygote()
            self.uid_base = self._zygote.uid_base
        return self._zygote

    def adopt(self, zygote: Zygote) -> "Grader":
        """Grade with ``zygote`` (started early; in a forked batch job, that job's own) and its uid range."""
        self.uid_base, self._zygote = zygote.uid_base, zygote
        return self

    def warm_cache(self) -> None:
        """Every case's reference answer: the reference grading itself, in process, or as an earlier run with the
        same grader on this machine kept it (``stored_answers.py``).

        Also learn which steps' requests build other steps' stand-ins: those steps are graded last.
        """
        self.kept_standins = stored_answers.load_standins(self.identity)
        kept = stored_answers.load(self.identity)
        if kept is not None:
            self.cache.update(kept[0])
            asked = kept[1]
            self.kept_answers = stored_answers.file_for(self.identity)
        else:
            asked = self._answer_every_case()
            self.kept_answers = stored_answers.save(self.identity, self.cache, asked)
        # a count's cases are known before any is run: a submission's worker gets them as one batch
        counts = {id(case["request"]): (step, count) for (step, count, *_), (case, _) in self.cache.items()}
        self.batches = plans([(counts.get(id(r)), r) for r in asked])
        for (step, *_), (case, _expected) in self.cache.items():
            builds = asked_standins(case["request"]) - {step}
            if builds:
                self.asked.setdefault(step, set()).update(builds)
        self.late_steps |= set(self.asked)
        # a function step whose answer is not a function of its tensors (init_qkv's parameters) gets no proxy
        self.policy.held_back = proxied_functions.held_back(self.cache, self.standin_kinds)
        # the reference answers live as long as the grader too (long_lived.py): a batch job's collector passes walk
        # only what that job makes, and write nothing to the pages it shares with this process. What the reference
        # grading left as garbage is collected first (a pass over what is not frozen yet: milliseconds), not kept.
        gc.collect()
        gc.freeze()

    def _answer_every_case(self) -> list[dict]:
        """Run the hidden suites with the reference as the student: every case's answer into ``self.cache``.
        The requests, in the order the cases ask for them."""
        answers: dict[int, dict] = {}
        asked: list[dict] = []

        def as_the_reference(step: str, request: dict) -> dict:
            """The reference's answer, as the case just cached it (computing it once, not twice)."""
            asked.append(request)
            if id(request) not in answers:
                answers.update((id(case["request"]), expected) for case, expected in self.cache.values())
            hit = answers.get(id(request))
            return hit if hit is not None else self.reference.run(request)  # a case built afresh each time

        self._run_tests(GradingPlugin(self.course, self.reference, as_the_reference, cache=self.cache))
        return asked

    def _run_tests(self, plugin: GradingPlugin) -> None:
        if self.tests is not None:
            direct.run(self.tests, plugin)
        else:
            run_suites(self.suites, plugin)

    def close(self) -> None:
        if self._reference_worker is not None:
            self._reference_worker.close()
            self._reference_worker = None
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
