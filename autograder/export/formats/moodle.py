"""Moodle's "Import grades > CSV file" format.

One header row, then one row per student: a column that identifies the user, the student's name
(for people: map it to "Ignore"), and the grade. On Moodle's import page choose "Map from" = the first
column and "Map to" = the matching user field ("Email address" -> useremail, "ID number" ->
useridnumber, "Username" -> username), then map the grade column to the grade item.

Moodle aborts the whole import when a row names a user it does not know, and a blank or ``-`` grade
would *erase* a grade already entered by hand; so students without a submission are left out of the
file (``--missing zero`` writes 0 for them instead), as are roster students without the identifier, hand-ins the
kit never graded (``--ungraded zero`` writes their score) and hand-ins a person excused (Moodle's import has no
excuse: ``grade export`` names them, to mark by hand).
"""
from __future__ import annotations

import csv
from typing import TextIO

from ..gradebook import Gradebook
from .options import ExportOptions, number

USER_COLUMNS = {"email": ("Email address", "email"), "idnumber": ("ID number", "sis_id"),
                "username": ("Username", "login")}


def write(book: Gradebook, options: ExportOptions, out: TextIO) -> list[str]:
    header, attribute = USER_COLUMNS[options.moodle_user]
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([header, "Full name", options.assignment])
    unidentified = []
    for entry in book.entries:
        s = entry.student
        cell = options.grade_cell(entry)
        if cell is None:
            continue
        key = getattr(s, attribute)
        if not key:
            unidentified.append(s.label)
            continue
        writer.writerow([key, s.name, cell])
    notes = []
    if unidentified:
        notes.append(f"left out of the Moodle file, no {attribute} in the roster: {', '.join(unidentified)}")
    if options.points > 100:
        notes.append(f"grades go up to {number(options.points)}: Moodle refuses grades above 100 unless "
                     "'unlimitedgrades' is on (or export with --points 100)")
    return notes
