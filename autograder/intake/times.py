"""When each submission was handed in, as the platform recorded it: never from the submission's own files.

A student controls every file of a submission, its times included (a ``timestamp.txt`` of their own, a
file's mtime). So submission times come only from outside it: Gradescope's ``submission_metadata.json``
(``run_autograder`` passes it on), nbgrader's collected ``timestamp.txt`` beside the submission it
collected, or a ``--times`` CSV exported from the LMS. A submission with no such time has none, and
``grade export`` counts it on time and names it.
"""
from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

from autograder.text_files import read_user_text

from . import hand_in_sizes


class TimesError(ValueError):
    """A times file that cannot be read, said in its own terms (file, line)."""


def parse(text: str) -> str:
    """An ISO-8601 time with a UTC offset (nbgrader's ``2026-12-10 14:03:22.123456 UTC`` too), as ISO text."""
    text = text.strip()
    for zone in (" UTC", " GMT", "Z"):
        if text.endswith(zone):
            text = text[: -len(zone)] + "+00:00"
    when = dt.datetime.fromisoformat(text.replace(" ", "T", 1))
    if when.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset")
    return when.isoformat()


def read(path: Path) -> dict[str, str]:
    """``submission,submitted_at`` rows (a header line first) -> {submission name: ISO time}; the name ``*``
    stands for every submission of the run that has no row of its own."""
    rows = list(csv.reader(read_user_text(path, TimesError, encoding="utf-8-sig").splitlines()))
    if not rows or [c.strip().lower() for c in rows[0][:2]] != ["submission", "submitted_at"]:
        raise TimesError(f"{path}, line 1: expected the header 'submission,submitted_at'")
    times = {}
    for number, row in enumerate(rows[1:], start=2):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) < 2:
            raise TimesError(f"{path}, line {number}: expected a submission name and a time")
        try:
            times[row[0].strip()] = parse(row[1])
        except ValueError as exc:
            raise TimesError(f"{path}, line {number}: {row[1].strip()!r} is not a date and time with its UTC "
                             f"offset, such as 2026-12-10T14:03:22+01:00 ({exc})") from None
    return times


#: a time as nbgrader writes it is 32 characters: a longer timestamp.txt is not read
MAX_STAMP = 256


def nbgrader_stamp(folder: Path) -> str | None:
    """The time nbgrader recorded for a submission it collected (``timestamp.txt`` beside the notebooks); none
    for a file over ``MAX_STAMP`` bytes, which is not read (``hand_in_sizes.read_at_most``)."""
    stamp = folder / "timestamp.txt"
    if not stamp.is_file() or stamp.is_symlink():
        return None
    try:
        data, _size = hand_in_sizes.read_at_most(stamp, MAX_STAMP)
        return parse(data.decode("utf-8", errors="replace")) if data is not None else None
    except (OSError, ValueError):
        return None
