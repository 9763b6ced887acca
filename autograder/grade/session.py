"""A grading session: course, reference and zygote loaded once, then one submission after another."""
from __future__ import annotations

import time
from pathlib import Path

from autograder.course import CourseError, load_course
from autograder.grading.reference import Reference
from autograder.grading.runner import SubmissionRunner
from autograder.grading.workers import Zygote

from . import results
from .plugin import GradingPlugin
from .suite_runner import run_suites, validate_suites


class Grader:
    def __init__(self, course_file: Path | str):
        course_file = Path(course_file).resolve()
        self.course = load_course(course_file)
        self.root = course_file.parent
        self.suites = (self.root / self.course.suites).resolve()
        try:
            self.reference = Reference(self.root / self.course.solutions, self.course.modules, list(self.course.steps))
        except (FileNotFoundError, LookupError, ImportError, SyntaxError) as exc:
            raise CourseError(f"cannot load the reference solutions: {exc}") from None
        validate_suites(self.course, self.suites, self.reference)
        self.standins = self.reference.standin_sources()
        self.zygote = Zygote()
        self.cache: dict = {}  # reference answers, shared by every submission of the batch

    def limits(self) -> dict:
        lim = self.course.limits
        return {"memory_mb": lim.memory_mb, "processes": lim.processes, "output_mb": lim.output_mb}

    def grade(self, folder: Path, notes: list[str] | None = None) -> dict:
        start = time.monotonic()
        times = {step: self.course.step_time(step) for step in self.course.steps}
        runner = SubmissionRunner(self.zygote, folder, self.course.modules, self.standins, times, self.limits())
        plugin = GradingPlugin(self.course, self.reference, runner.run, cache=self.cache)
        try:
            run_suites(self.suites, plugin)
        finally:
            runner.close()
        notes = list(notes or [])
        if runner.output_bytes:
            notes.append(f"Your code printed {runner.output_bytes} bytes while being graded; printed output is not shown here.")
        return results.build(self.course, plugin.outcomes, notes=notes, execution_time=time.monotonic() - start)

    def close(self) -> None:
        self.zygote.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
