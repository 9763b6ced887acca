"""Which results.json hold a score the kit never gave: the hand-in, or a part of it, was not graded.

A corrupt archive, an empty folder, a broken notebook, a file the kit could not read, a failure of the grader's own:
results.json then holds 0 for what was not graded, a number nobody decided. ``grade export`` and ``grade lti push``
leave such a hand-in blank (post nothing) unless asked for zeros (``--ungraded zero``), and name each in their report;
a person's decision (outputs/decision.py) is what they use instead. Read from results.json's problems as data
(grading/suites/problems.py), never from its words. A module that was not handed in is graded: its steps score
zero, as the student's own doing (tests/integration/test_decisions.py).
"""
from __future__ import annotations

from autograder.outputs.results import Results
from autograder.intake.not_graded_words import MODULE, NOT_GRADED


def reasons(results: Results) -> list[str]:
    """Why the score of ``results`` was never given, in short words (none: it was graded)."""
    found = []
    for problem in results.extra_data.problems:
        if problem.kind == "not_graded":
            found.append(f"not graded: {NOT_GRADED.get(problem.cause, problem.cause or 'unknown')}")
        elif problem.kind == "module_not_graded" and problem.cause != "missing":
            found.append(f"{problem.module} not graded: {MODULE.get(problem.cause, problem.cause)}")
        elif problem.kind == "grader_error":
            found.append("the grader itself failed on some counts (grader_errors.log)")
    if results.extra_data.grader_errors and not any("grader itself" in r for r in found):
        found.append("the grader itself failed on some counts (grader_errors.log)")
    return found
