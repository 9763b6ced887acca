"""The class list: who is enrolled, under which identifiers, and which roster row a submission name is.

A roster is a CSV file with a header row. Recognised columns (case, spaces, ``-`` and ``_`` ignored):

=========  ==================================================================  ==========================
column     what it holds                                                        also accepted as
=========  ==================================================================  ==========================
name       the student's name as the LMS shows it (Canvas: "Last, First")       student, full name,
                                                                                first name + last name
email      e-mail address                                                       email address, e-mail
login      LMS login / username (Canvas "SIS Login ID", Moodle "username")      username, sis login id
id         the LMS's own user number (Canvas "ID")                              canvas id, canvas user id
sis_id     the institution's student number (Canvas "SIS User ID",              sis user id, id number,
           Moodle "ID number")                                                  idnumber, student number
section    section or group                                                     sections
=========  ==================================================================  ==========================

Other columns are ignored, so a Canvas gradebook export or a Moodle grade export can serve as the
roster as is (Canvas's "Points Possible" row and its "Student, Test" user are skipped).

A submission folder name belongs to the student whose ``login``, ``sis_id``, ``id``, ``email`` or the
part of ``email`` before the ``@`` equals it, ignoring case.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from autograder.text_files import read_user_text

IDENTIFYING = ("login", "sis_id", "id", "email")

ALIASES = {
    "name": "name", "student": "name", "fullname": "name", "studentname": "name",
    "firstname": "first_name", "lastname": "last_name", "surname": "last_name",
    "email": "email", "emailaddress": "email", "mail": "email",
    "login": "login", "username": "login", "sisloginid": "login", "loginid": "login",
    "id": "id", "canvasid": "id", "canvasuserid": "id", "userid": "id",
    "sisid": "sis_id", "sisuserid": "sis_id", "idnumber": "sis_id", "studentid": "sis_id",
    "studentnumber": "sis_id",
    "section": "section", "sections": "section",
}
CANVAS_TEST_STUDENT = {"student, test", "test student"}


class RosterError(Exception):
    """The roster cannot be used; the message names the file (and the line when it can)."""


@dataclass(frozen=True)
class Student:
    line: int            # line of the roster file, for messages
    name: str = ""
    email: str = ""
    login: str = ""
    id: str = ""
    sis_id: str = ""
    section: str = ""

    @property
    def label(self) -> str:
        """How the report names the student: name and the first identifier it has."""
        key = next((getattr(self, k) for k in ("login", "sis_id", "email", "id") if getattr(self, k)), "")
        if self.name and key:
            return f"{self.name} ({key})"
        return self.name or key or f"roster line {self.line}"

    def keys(self) -> set[str]:
        """The lower-cased identifiers a submission folder name may be."""
        keys = {getattr(self, k).strip().lower() for k in IDENTIFYING}
        if "@" in self.email:
            keys.add(self.email.split("@", 1)[0].strip().lower())
        keys.discard("")
        return keys


def _column(header: str) -> str | None:
    return ALIASES.get(re.sub(r"[\s_\-]+", "", header.strip().lstrip("\ufeff").lower()))


def read_roster(path: Path) -> list[Student]:
    text = read_user_text(path, RosterError, encoding="utf-8-sig", not_utf8="; save it as CSV UTF-8")
    first = text.split("\n", 1)[0]
    delimiter = ";" if first.count(";") > first.count(",") else ","   # spreadsheets in some locales
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next(reader, None)
    if not header:
        raise RosterError(f"{path}: empty file (expected a header row such as name,email,login,sis_id,section)")
    columns: dict[str, int] = {}
    for i, head in enumerate(header):
        col = _column(head)
        if col and col not in columns:
            columns[col] = i
    if not any(c in columns for c in IDENTIFYING):
        raise RosterError(f"{path}, line 1: no column identifies students (found {', '.join(map(repr, header))}; "
                          "expected at least one of login, sis_id, id, email)")
    students = []
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if row and "points possible" in row[0].lower():
            continue  # Canvas gradebook export
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", cell, re.I) for cell in row):
            continue  # Canvas gradebook export
        values = {c: (row[i].strip() if i < len(row) else "") for c, i in columns.items()}
        name = values.get("name") or " ".join(v for v in (values.get("first_name"), values.get("last_name")) if v)
        if name.lower() in CANVAS_TEST_STUDENT:
            continue
        student = Student(line, name=name, **{k: values.get(k, "") for k in (*IDENTIFYING, "section")})
        if not student.keys():
            raise RosterError(f"{path}, line {line}: {name or 'this row'} has no "
                              f"{' or '.join(c for c in IDENTIFYING if c in columns)}")
        students.append(student)
    if not students:
        raise RosterError(f"{path}: no students below the header row")
    return students


class RosterIndex:
    """Look a submission name up among the roster's identifiers."""

    def __init__(self, students: list[Student]):
        self._by_key: dict[str, list[Student]] = {}
        for student in students:
            for key in student.keys():
                self._by_key.setdefault(key, []).append(student)

    def lookup(self, name: str) -> list[Student]:
        """The roster rows ``name`` designates: one, none (not on the roster) or several (ambiguous)."""
        return list(dict.fromkeys(self._by_key.get(name.strip().lower(), [])))
