"""What every format writer is told besides the gradebook."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExportOptions:
    assignment: str              # the grade column's title (Canvas: "Title (assignment id)" to target one)
    points: float                # what a full score is worth in the export
    course_points: float         # what a full score is worth in results.json (course.yml)
    missing: str = "blank"       # roster students without a submission: "blank" or "zero"
    moodle_user: str = "email"   # Moodle's user identity column: "email", "idnumber" or "username"

    @property
    def scale(self) -> float:
        return self.points / self.course_points if self.course_points else 1.0

    ungraded: str = "blank"      # hand-ins the kit never graded (export/ungraded.py): "blank" or "zero"

    def grade_cell(self, entry) -> str | None:
        """A roster entry's grade as exported: its final score scaled (a person's decision first), "0" for a missing
        submission when asked for zeros, else None (blank: no submission, excused, never graded by the kit)."""
        if entry.final is not None:
            return number(entry.final * self.scale)
        if entry.submission is None and self.missing == "zero" and entry.unreadable is None:
            return "0"
        return None


def number(value: float | None) -> str:
    """A score as LMSs read it: at most two decimals, no trailing zeros, '' for None."""
    if value is None:
        return ""
    text = f"{round(value, 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
