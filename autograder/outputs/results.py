"""``results.json``: one model, used by everything that writes or reads it.

The format is Gradescope's (https://gradescope-autograders.readthedocs.io/en/latest/specs/): ``score``,
``execution_time``, ``output``, ``visibility``, ``stdout_visibility``, ``tests[]`` (``name``, ``number``,
``score``, ``max_score``, ``status``, ``output``, ``tags``, ``visibility``), ``output_format`` and
``test_output_format`` (the top-level output is the feedback page's HTML, the tests' outputs text), plus the kit's
``extra_data`` (``submission``, ``submitted_at``, ``submission_hash``, ``grader_hash``, ``isolation``,
``grader_errors``, and ``problems``: what a person should look at, as data; Gradescope ignores ``extra_data``).
``grade autograde`` writes it (``write_atomic``); resume, the class summary and ``grade export`` read it
(``read``), and a file they cannot use is said in the reader's terms (``ResultsError``).
"""
from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from . import atomic_file


class ResultsError(ValueError):
    """A results.json that cannot be used; the message says why, in a reader's terms."""


def _finite(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError("not a finite number")
    return float(value)


class Test(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = ""
    number: str | None = None
    score: float = 0.0
    max_score: float
    status: Literal["passed", "failed"] | None = None
    output: str = ""
    tags: list[str] = []
    visibility: str | None = None

    _number = field_validator("score", "max_score", mode="before")(lambda cls, v: _finite(v))

    @property
    def step(self) -> str:
        return self.name.split(" ", 1)[0]

    @property
    def count(self) -> str:
        return self.name.split(":", 1)[0].split(" ", 1)[-1]


#: Problem.kind: the submission was not graded at all; one module was not (staging could not use its file);
#: a step ran out of time; a step hit another limit; the worker died another way; the student's code changed
#: the grader's own functions; the grader itself failed (a bug in a suite)
PROBLEM_KINDS = ("not_graded", "module_not_graded", "timed_out", "limit", "crashed", "tampering", "grader_error",
                 "cell_failed")


class Problem(BaseModel):
    """Something a person should look at, as data (the class summary's "needs a person" list reads it)."""
    model_config = ConfigDict(extra="allow")

    kind: str  # PROBLEM_KINDS
    #: not_graded: symlink, unsupported, empty_folder, empty_archive, no_modules, several_copies, corrupt, unreadable,
    #: too_many_entries, too_large, zip_bomb, archive_too_large, notebook_too_large, folder_too_large, too_many_files,
    #: staging_error (intake/stage.py); module_not_graded: not_utf8, too_large, unreadable, symlink, broken_notebook,
    #: missing
    cause: str | None = None
    #: timed_out: "time", "submission time" or "import" (the module's own code); limit: "memory", "output", "processes"
    limit: str | None = None
    module: str | None = None
    steps: list[str] = []  # the steps it cost, in the order they were graded
    message: str = ""  # in the words the student read


class ExtraData(BaseModel):
    model_config = ConfigDict(extra="allow")

    submission: str | None = None
    submitted_at: str | None = None  # ISO 8601 with its UTC offset, from the platform only (intake/times.py)
    submission_hash: str | None = None
    grader_hash: str | None = None
    isolation: str | None = None
    grader_errors: int = 0
    problems: list[Problem] = []

    @field_validator("submitted_at")
    @classmethod
    def _aware(cls, value):
        if value is None:
            return value
        try:
            when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"extra_data.submitted_at is not an ISO-8601 date and time ({value!r})") from None
        if when.tzinfo is None:
            raise ValueError(f"extra_data.submitted_at has no UTC offset ({value!r}): cannot tell whether it was late")
        return value

    @property
    def submitted_time(self) -> datetime | None:
        return datetime.fromisoformat(self.submitted_at.replace("Z", "+00:00")) if self.submitted_at else None


class Results(BaseModel):
    model_config = ConfigDict(extra="allow")

    score: float
    execution_time: float | None = None
    output: str = ""
    #: "html" when ``output`` is the feedback page's body (autograder/pages/gradescope_html.py); tests stay "text"
    output_format: str | None = None
    test_output_format: str | None = None
    visibility: str = "visible"
    stdout_visibility: str = "hidden"
    tests: list[Test] = []
    extra_data: ExtraData = ExtraData()

    _number = field_validator("score", mode="before")(lambda cls, v: _finite(v))

    @property
    def max_score(self) -> float | None:
        return float(sum(t.max_score for t in self.tests)) if self.tests else None

    def as_json(self) -> dict:
        return self.model_dump(mode="json", exclude_none=True)


def _reason(error: ValidationError, data: dict) -> str:
    first = error.errors()[0]
    where = first["loc"]
    if where[:1] == ("score",):
        return f"no numeric top-level 'score' (got {data.get('score')!r})"
    if where[:1] == ("tests",) and where[-1:] in (("max_score",), ("score",)):
        return f"a test in 'tests' has no numeric '{where[-1]}'"
    if where[:2] == ("extra_data", "submitted_at"):
        return str(first.get("ctx", {}).get("error") or first["msg"]).removeprefix("Value error, ")
    return f"{'.'.join(map(str, where)) or 'the file'}: {first['msg']}"


def parse(data) -> Results:
    if not isinstance(data, dict):
        raise ResultsError("not a JSON object")
    try:
        return Results.model_validate(data)
    except ValidationError as exc:
        raise ResultsError(_reason(exc, data)) from None


def read(path: Path) -> Results:
    """The results in ``path``; ``ResultsError`` says what is wrong with it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError("no results.json in this folder") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read it ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return parse(data)


def write_atomic(path: Path, data: dict | BaseModel) -> None:
    """Write JSON so that a reader (or a resumed batch) never sees a half-written file."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json", exclude_none=True)
    atomic_file.write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n", durable=True)
