"""A plain CSV for people and spreadsheets: every roster student, with the arithmetic shown."""
from __future__ import annotations

import csv
from typing import TextIO

from ..gradebook import Gradebook
from ..late_policy import LATE
from .options import ExportOptions, number

HEADER = ["student_id", "name", "email", "section", "submission", "submitted_at", "raw_score", "max_score",
          "late_days", "penalty_percent", "final_score", "status", "note"]


def note(entry) -> str:
    """Why a row's grade is what it is, when a person or the kit's report has something to say."""
    sub = entry.submission
    if sub is None:
        return ""
    if entry.decision is not None:
        was = f"; the kit: {'; '.join(sub.ungraded)}" if sub.ungraded else ""
        return entry.decision.words() + was
    if sub.ungraded:
        return "; ".join(sub.ungraded) + ("" if entry.withheld else " (exported as scored: --ungraded zero)")
    return ""


def write(book: Gradebook, options: ExportOptions, out: TextIO) -> list[str]:
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(HEADER)
    for entry in book.entries:
        s = entry.student
        sub, late = entry.submission, entry.lateness
        student_id = s.sis_id or s.id or s.login or s.email
        if sub is None:
            final = "0" if options.missing == "zero" and entry.unreadable is None else ""
            name = entry.unreadable.name if entry.unreadable else ""
            writer.writerow([student_id, s.name, s.email, s.section, name, "", "", number(options.points),
                             "", "", final, entry.status, ""])
            continue
        raw = entry.raw
        final = entry.final
        writer.writerow([
            student_id, s.name, s.email, s.section, sub.name,
            sub.submitted_at.isoformat() if sub.submitted_at else "",
            "" if raw is None or entry.withheld else number(raw * options.scale), number(options.points),
            number(late.late_days) if late.status == LATE else ("" if sub.submitted_at is None else "0"),
            number(late.penalty * 100) if final is not None else "",
            "" if final is None else number(final * options.scale),
            entry.status, note(entry),
        ])
    return []
