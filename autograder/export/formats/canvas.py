"""Canvas's gradebook import CSV (Grades > Import).

Layout, as Canvas's own gradebook export writes it and its importer (GradebookImporter) reads it:
a header row ``Student,ID,SIS User ID,SIS Login ID,Section,<assignment>``; a second row whose first
cell is ``Points Possible`` and whose assignment cell holds the assignment's points (used when the
import creates the assignment); then one row per student. Canvas finds the student by ``ID`` (its
user number), else ``SIS User ID``, else ``SIS Login ID``, else by name. An assignment column titled
``Title (12345)`` updates assignment 12345; a title Canvas does not know creates a new assignment.

A blank cell is "no score": roster students without a submission get a blank cell (or 0 with
``--missing zero``), and so does a hand-in the kit never graded (or its score with ``--ungraded zero``); a hand-in a
person excused (``grade decide --excuse``) gets ``EX``, Canvas's own mark for it. Canvas's import preview lists every
cell that would change before it saves.
"""
from __future__ import annotations

import csv
from typing import TextIO

from ..gradebook import Gradebook
from .options import ExportOptions, number

HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "    Points Possible"   # Canvas's export writes it indented; the importer matches the words
EXCUSED = "EX"   # what Canvas's gradebook shows and its importer takes for an excused submission


def write(book: Gradebook, options: ExportOptions, out: TextIO) -> list[str]:
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([*HEADER, options.assignment])
    writer.writerow([POINTS_POSSIBLE, "", "", "", "", number(options.points)])
    name_only = []
    for entry in book.entries:
        s = entry.student
        cell = EXCUSED if entry.excused else options.grade_cell(entry) or ""
        writer.writerow([s.name, s.id, s.sis_id, s.login, s.section, cell])
        if not (s.id or s.sis_id or s.login):
            name_only.append(s.label)
    notes = []
    if name_only:
        notes.append(f"Canvas can match {len(name_only)} student(s) by name only (no id, sis_id or login in "
                     f"the roster): {', '.join(name_only)}")
    return notes
