"""Every ``noqa`` in the kit's code names the rule it silences and says why, as in
``# noqa: PLC0415 - nbgrader's dependency``: a reader can tell a considered
exception from a silenced warning. The files are those ``ruff check`` reads (pyproject.toml's [tool.ruff])."""
from __future__ import annotations

import io
import re
import tokenize
import tomllib


from .conftest import ROOT

NOQA = re.compile(r"#\s*noqa\b(?P<codes>:\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?(?P<rest>.*)", re.IGNORECASE)
REASON = re.compile(r"\s+-\s+\S")  # " - " and at least one word after the codes


def unexplained(source: str) -> list[tuple[int, str]]:
    """(line, comment) of each ``noqa`` comment in ``source`` that names no rule or gives no reason."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        match = NOQA.search(token.string)
        if match and (not match["codes"] or not REASON.match(match["rest"])):
            found.append((token.start[0], token.string))
    return found


def linted_files() -> list:
    """The Python files ``ruff check`` reads: the tree less pyproject's ``extend-exclude`` (and what ruff always
    skips)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]
    excluded = [ROOT / entry for entry in config["extend-exclude"]]
    files = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if any(part.startswith(".") or part in ("build", "dist", "__pycache__") for part in parts):
            continue
        if any(path.is_relative_to(folder) for folder in excluded):
            continue
        files.append(path)
    return files


def test_every_noqa_names_its_reason():
    files = linted_files()
    assert any(path.name == "cli.py" for path in files) and len(files) > 150  # the kit's code is read
    missing = [f"{path.relative_to(ROOT)}:{line}: {comment}"
               for path in files for line, comment in unexplained(path.read_text(encoding="utf-8"))]
    assert not missing, "a noqa without its reason (write `# noqa: CODE - why`):\n" + "\n".join(missing)


def test_a_noqa_without_a_reason_is_found():
    """The control: the comments the test above refuses, and those it takes."""
    source = ("import torch  # noqa: PLC0415\n"
              "import numpy  # noqa\n"
              "x = 1  # noqa: E731 -\n"
              "y = 2  # noqa: BLE001 (parenthesised)\n"
              "import dask  # noqa: F401, PLC0415 - optional extra: cluster\n"
              "z = '# noqa: PLC0415 inside a string is no comment'\n")
    assert [line for line, _ in unexplained(source)] == [1, 2, 3, 4]


def test_the_student_code_left_out_is_student_code():
    """What ruff does not read is code written as a student writes it (handed out or handed in), not the kit's."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]
    assert sorted(config["extend-exclude"]) == ["exercises", "samples/submissions", "tests/corpus"]
    linted = {path.relative_to(ROOT).parts[0] for path in linted_files()}
    assert {"autograder", "tests", "bench", "solutions"} <= linted and "exercises" not in linted
