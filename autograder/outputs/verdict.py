"""The outcome of one case, and the failure a check raises."""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder.feedback.catalogue import ids_of

PASSED = "passed"
FAILED = "failed"
NOT_ATTEMPTED = "not attempted"
BLOCKED = "blocked"  # a step not checked because a step it builds on fails (grade check)


def step_status(count_statuses: set[str], blocked: bool = False) -> str:
    """A step's status from its counts': blocked, not attempted (every count), passed (every count), else failed."""
    if blocked:
        return BLOCKED
    if count_statuses == {NOT_ATTEMPTED}:
        return NOT_ATTEMPTED
    return PASSED if count_statuses == {PASSED} else FAILED


@dataclass
class Verdict:
    status: str
    lines: list[str] = field(default_factory=list)
    #: said to the student whatever the status, never a reason for it: a fact that is the worker's word
    notes: list[str] = field(default_factory=list)
    #: Python's and torch's warnings about the student's own lines (``feedback/warned.py``): said whatever the
    #: status, once per submission by whoever shows them (``warned.unsaid``), never as printed output
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def misconceptions(self) -> list[str]:
        """The ids of the misconceptions its "likely:" lines name (``feedback.catalogue.Likely``), in order."""
        return ids_of(self.lines)


class StepFailure(AssertionError):
    """Raised inside a hidden test when a case fails; carries the student-facing feedback."""

    def __init__(self, step: str, count: str, case: str, verdict: Verdict):
        self.step, self.count, self.case, self.verdict = step, count, case, verdict
        super().__init__(self.feedback())

    def feedback(self) -> str:
        head = f"{self.step} [{self.count}] case {self.case!r}: {self.verdict.status}"
        return "\n".join([head, *("  " + line for line in self.verdict.lines)])
