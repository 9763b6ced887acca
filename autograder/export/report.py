"""What ``grade export`` tells the instructor: what was exported, and everything that was not."""
from __future__ import annotations

from .formats.options import ExportOptions, number
from .gradebook import Gradebook
from .late_policy import IN_GRACE, LATE, NO_POLICY, ON_TIME, UNDATED

MISSING_CELL = {
    ("canvas", "blank"): "left blank in the Canvas file, so no score Canvas already has is changed",
    ("moodle", "blank"): "left out of the Moodle file, so no grade Moodle already has is erased",
    ("csv", "blank"): "listed with an empty final_score",
    ("canvas", "zero"): "given 0 in the Canvas file (--missing zero)",
    ("moodle", "zero"): "given 0 in the Moodle file (--missing zero)",
    ("csv", "zero"): "listed with final_score 0 (--missing zero)",
}


#: a hand-in the kit never graded (export/ungraded.py), in each format
UNGRADED_CELL = {
    ("canvas", "blank"): "left blank in the Canvas file",
    ("moodle", "blank"): "left out of the Moodle file",
    ("csv", "blank"): "listed with an empty final_score",
    ("canvas", "zero"): "given the kit's score in the Canvas file (--ungraded zero)",
    ("moodle", "zero"): "given the kit's score in the Moodle file (--ungraded zero)",
    ("csv", "zero"): "listed with the kit's score (--ungraded zero)",
}
EXCUSED_CELL = {"canvas": "marked EX (excused) in the Canvas file", "moodle": "left out of the Moodle file (Moodle's "
                "import has no excuse: mark it by hand)", "csv": "listed as excused, with an empty final_score"}


def _names(items) -> str:
    return ", ".join(items)


def summary(book: Gradebook, options: ExportOptions, fmt: str) -> list[str]:
    """Informational lines."""
    graded = book.graded
    counts = {k: sum(1 for e in graded if e.status == k) for k in (ON_TIME, IN_GRACE, LATE, UNDATED, NO_POLICY)}
    parts = [f"{n} {label}"
             for label, n in (("on time", counts[ON_TIME]), ("within the grace period", counts[IN_GRACE]),
                                             ("late", counts[LATE]), ("undated", counts[UNDATED]),
                                             ("without a late policy", counts[NO_POLICY])) if n]
    lines = [f"exported {len(graded)} of {len(book.entries)} roster student(s) with a grade"
             + (f": {', '.join(parts)}" if parts else "")]
    scale = options.scale
    for e in graded:
        if e.status == LATE:
            lines.append(f"  late: {e.student.label} submitted {e.submission.submitted_at.isoformat()}, "
                         f"{number(e.lateness.late_days)} day(s) late, -{number(e.lateness.penalty * 100)}%: "
                         f"{number(e.raw * scale)} -> {number(e.final * scale)} / {number(options.points)}")
    for e in book.decided:
        if not e.excused:
            named = "" if e.submission.name.lower() in e.student.label.lower() else f" (hand-in {e.submission.name})"
            lines.append(f"  decided: {e.student.label}{named}: {e.decision.words(options.course_points)}")
    return lines  # undated students are named once, among the warnings


def warnings(book: Gradebook, options: ExportOptions, fmt: str) -> list[str]:
    """Everything the export file does not carry, one line each."""
    lines = []
    missing = [e for e in book.missing if e.unreadable is None]
    if missing:
        lines.append(f"{len(missing)} roster student(s) without a submission, {MISSING_CELL[fmt, options.missing]}: "
                     f"{_names(e.student.label for e in missing)}")
    if book.unknown:
        lines.append(f"{len(book.unknown)} submission(s) match no roster student and are not in the export: "
                     f"{_names(s.name for s in book.unknown)}")
    for name, students in book.ambiguous:
        lines.append(f"submission {name} matches several roster students ({_names(s.label for s in students)}); "
                     "not in the export")
    for student, names, kept in book.duplicates:
        lines.append(f"{student.label} has {len(names)} submissions ({_names(names)}); exported {kept}, the latest")
    for bad in book.unreadable:
        who = next((e.student.label for e in book.entries if e.unreadable is bad), None)
        tail = f" ({who}: no grade exported)" if who else ""
        lines.append(f"unreadable {bad.path}: {bad.reason}{tail}")
    ungraded = book.not_graded
    if ungraded:
        lines.append(f"{len(ungraded)} hand-in(s) the kit never graded, {UNGRADED_CELL[fmt, options.ungraded]}"
                     + ("" if options.ungraded == "zero"
                        else "; record a decision for each (grade decide NAME --score N "
                        "--reason ...) or export the kit's zeros with --ungraded zero")
                     + ": " + _names(f"{e.student.label} ({e.submission.name}: {'; '.join(e.submission.ungraded)})"
                                     for e in ungraded))
    excused = [e for e in book.entries if e.excused]
    if excused:
        lines.append(f"{len(excused)} excused by a person, {EXCUSED_CELL[fmt]}: "
                     + _names(f"{e.student.label} ({e.decision.reason})" if e.decision.reason else e.student.label
                              for e in excused))
    for e in book.decided:
        if e.submission.changed_since_decision:
            lines.append(f"{e.student.label}: the decision in {e.submission.name}/decision.json was recorded for an "
                         "earlier hand-in than the one graded now: check that it still holds")
    undated = [e.student.label for e in book.entries if e.status == UNDATED and e.submission.score is not None]
    if undated:
        lines.append(f"{len(undated)} student(s) undated, counted on time: no submission time from the platform "
                     f"(results.json has no extra_data.submitted_at), so no late penalty was applied: "
                     f"{_names(undated)} (give the LMS's times with --times times.csv)")
    for sub in book.max_mismatch:
        lines.append(f"{sub.path}: tests add up to {number(sub.max_score)} points but course.yml to "
                     f"{number(book.max_points)}: graded with another course.yml?")
    return lines
