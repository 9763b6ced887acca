"""docs/isolation.md names, for each layer of the sandbox, the test that shows what it stops: every test it names
exists. What this stops: a layer whose reason rests on a test that was renamed, moved or deleted (the page would
go on citing evidence nobody runs)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import ROOT

PAGE = ROOT / "docs" / "isolation.md"
#: `tests/<path>` or `tests/<file>.py::<test name>`, as the page writes them (in backticks)
REFERENCE = re.compile(r"`(tests/[\w./-]+?)(?:::(\w+))?`")


def missing(text: str, root: Path) -> list[str]:
    """The references in ``text`` to a test file, folder or test function that does not exist under ``root``."""
    out = []
    for path, name in REFERENCE.findall(text):
        target = root / path
        if not target.exists():
            out.append(path)
        elif name and not re.search(rf"^\s*def {re.escape(name)}\(", target.read_text(encoding="utf-8"), re.M):
            out.append(f"{path}::{name}")
    return out


@pytest.mark.unit
def test_every_test_the_isolation_page_names_exists():
    text = PAGE.read_text(encoding="utf-8")
    assert len(REFERENCE.findall(text)) >= 20, "the page names the tests of its layers"
    assert missing(text, ROOT) == []


@pytest.mark.unit
def test_a_name_that_does_not_exist_is_found():
    """The control: a renamed test, a deleted file and a moved folder are each reported."""
    text = ("`tests/integration/test_isolation.py::test_no_such_test`, `tests/test_no_such_file.py`, "
            "`tests/corpus/no_such/`, "
            "`tests/integration/test_isolation.py::test_a_worker_reaches_no_service_on_loopback`")
    assert missing(text, ROOT) == ["tests/integration/test_isolation.py::test_no_such_test",
                                   "tests/test_no_such_file.py", "tests/corpus/no_such/"]
