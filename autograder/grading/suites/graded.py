"""A graded submission as one value: its results.json, its feedback page and the grader's own errors.

A submission staging could not use (``Staged.problem``: a corrupt archive, no module) and one the hidden
suites graded become the same value through the same function, ``grade_submission``: the outcome of every
count (for a rejected one, each "not graded", the reason said once at the top), then results.json in
Gradescope's format, the submission's identity and isolation in ``extra_data``, the page's HTML in
``output`` (``output_format``), and only then, complete, validated against the one results model
(``autograder/outputs/results.py``). Built in a batch job or on a Dask worker; written by the batch
(``autograder/autograde/batch.py: write``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from autograder.course import Course
from autograder.outputs.outcomes import CountOutcome
from autograder.intake.stage import Staged
from autograder.outputs.results import parse

from . import gradescope_results, problems as problem_list, submission_page
from .plugin import FAILED


@dataclass(frozen=True)
class SuiteRun:
    """What the hidden suites found in one submission (``Grader.run``), before anything is built from it."""
    outcomes: dict[tuple[str, str], CountOutcome]
    notes: list[str]  # said once, at the top of its feedback
    problems: list[dict]  # what a person should look at, as data (problems.py): extra_data.problems
    grader_errors: tuple[str, ...] = ()  # the grader's own failures (a bug in a suite): grader_errors.log only
    execution_time: float | None = None


@dataclass(frozen=True)
class FeedbackPage:
    """feedback.html's content: the step cards, their pictures (failing public cases) and the summary lines."""
    cards: list
    pictures: dict
    lines: list[str]


@dataclass(frozen=True)
class GradedSubmission:
    """One submission, graded or rejected: everything the batch writes, logs and counts of it."""
    name: str
    results: dict  # results.json, complete and validated (not to be changed)
    page: FeedbackPage
    isolation: str  # the sandbox it was graded in, in words (the run's last lines)
    problem: str | None = None  # why staging could not grade it at all (then every count is "not graded")
    grader_errors: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        return self.results["score"]


def rejected(course: Course, problem: str, notes: list[str] | None = None, cause: str | None = None) -> SuiteRun:
    """A submission that could not be graded at all: every count "not graded", the reason said once;
    ``cause``: why, as data (intake/stage.py's ``Staged.cause``)."""
    outcomes = {(step, count): CountOutcome(step, count, FAILED, gradescope_results.NOT_GRADED)
                for step, spec in course.steps.items() for count in spec.counts}
    return SuiteRun(outcomes, [f"This submission could not be graded: {problem}", *(notes or [])],
                    problem_list.not_graded(cause, problem))


def grade_submission(grader, staged: Staged, extra: dict) -> GradedSubmission:
    """Grade one staged submission with ``grader`` (``session.Grader``), or reject it when staging found nothing
    to grade; ``extra``: its identity (submission, submitted_at, hashes: ``autograde/batch.py: prepare``).

    Writes nothing. Shared by the local jobs and the Dask workers (``autograder/autograde/cluster/``), so both grade
    alike.
    """
    course = grader.course
    if staged.problem:
        found = rejected(course, staged.problem, staged.notes, staged.cause)
    else:
        found = grader.run(staged.folder, notes=staged.notes, module_errors=staged.module_errors)
    if staged.beside:  # a note handed in with it: a person reads it (discovery saw it, not a worker)
        found = replace(found, problems=[*found.problems, *problem_list.beside(staged.beside)])
    results = gradescope_results.build(course, found.outcomes, notes=found.notes, execution_time=found.execution_time)
    cards, pictures = submission_page.cards_and_pictures(results, found.outcomes)
    page = FeedbackPage(cards, pictures, results["output"].splitlines())
    zygote = grader.zygote
    results["extra_data"] = {**extra, "isolation": zygote.level, "isolation_detail": zygote.isolation,
                             "grader_errors": len(found.grader_errors), "problems": found.problems}
    results = submission_page.embed(results, cards, pictures)
    parse(results)  # once, complete: what is written is what every reader reads (ResultsError otherwise)
    return GradedSubmission(staged.name, results, page, zygote.isolation, staged.problem,
                            tuple(found.grader_errors))
