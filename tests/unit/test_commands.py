"""Every verb is a plain Python function too: a script or notebook calls it, and a user's mistake is an exception."""
from __future__ import annotations

import importlib

import pytest

from autograder.commands import autograde, check, export
from autograder.usage import UsageError

from .conftest import ROOT


@pytest.mark.parametrize("verb", ["check", "assign", "autograde", "export", "release", "gradescope", "nbgrader"])
def test_each_verb_has_a_main_and_no_click(verb):
    module = importlib.import_module(f"autograder.commands.{verb}")
    assert callable(module.main)
    source = (ROOT / "autograder" / "commands" / f"{verb}.py").read_text()
    assert "import click" not in source and "sys.exit" not in source


def test_a_mistake_is_an_exception_that_names_it(tmp_path):
    with pytest.raises(UsageError, match="did you mean simple_attention"):
        check.main(ROOT / "exercises", steps=("simple_atention",))
    with pytest.raises(UsageError, match="no such folder"):
        check.main(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="not both or neither"):
        autograde.main((), out=tmp_path)
    roster = tmp_path / "roster.csv"
    roster.write_text("name,email\nAda,ada@example.org\n")
    with pytest.raises(UsageError, match="no such folder"):
        export.main(tmp_path / "no-results", roster, "csv", course_file=ROOT / "course.yml")


def test_click_lives_in_the_cli_only():
    users = [p.relative_to(ROOT).as_posix() for p in (ROOT / "autograder").rglob("*.py")
             if "import click" in p.read_text(encoding="utf-8")]
    assert users == ["autograder/cli.py"]
