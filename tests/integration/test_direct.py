"""The hidden tests are collected by pytest once per batch and then called directly: same results.

A suite that needs pytest's machinery (a fixture or a conftest.py of its own) makes every
submission go through ``pytest.main`` instead, still with the same results.
"""
from __future__ import annotations

import shutil

import pytest

from autograder.grading.suites.graded import grade_submission
from autograder.grading.suites.session import Grader
from autograder.intake.stage import Staged

from .conftest import CORPUS, ROOT

SUBMISSIONS = ["bug_no_scaling", "bug_mha_no_out_proj", "bug_transfer_no_transpose", "stubs"]


def _view(result: dict) -> list:
    return [(t["name"], t["score"], t["output"]) for t in result["tests"]]


def _grade(grader: Grader, folder) -> dict:
    """``folder``'s results.json as the batch builds it."""
    return grade_submission(grader, Staged(folder.name, folder), {"submission": folder.name}).results


@pytest.fixture(scope="module")
def grader():
    with Grader(ROOT / "course.yml") as g:
        yield g


def test_the_unit_suites_run_directly(grader):
    assert grader.tests is not None
    assert {(t.step, t.count) for t in grader.tests} == {
        (step, count) for step, spec in grader.course.steps.items() for count in spec.counts}


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_direct_calls_grade_as_pytest_does(grader, name):
    direct = _grade(grader, CORPUS / name)
    tests, grader.tests = grader.tests, None  # the pytest.main path
    try:
        through_pytest = _grade(grader, CORPUS / name)
    finally:
        grader.tests = tests
    assert direct["score"] == through_pytest["score"] < 81
    assert _view(direct) == _view(through_pytest)


def test_a_suite_with_its_own_fixture_runs_through_pytest(tmp_path):
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "autograder" / "unit" / "suites", suites, ignore=shutil.ignore_patterns("__pycache__"))
    (suites / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef instructor_setup():\n    yield\n")
    course = tmp_path / "course.yml"
    course.write_text((ROOT / "course.yml").read_text()
                      .replace("solutions: solutions", f"solutions: {ROOT / 'solutions'}")
                      .replace("suites: autograder/unit/suites", f"suites: {suites}"))
    with Grader(course) as g:
        assert g.tests is None
        result = _grade(g, CORPUS / "bug_no_scaling")
    with Grader(ROOT / "course.yml") as g:
        expected = _grade(g, CORPUS / "bug_no_scaling")
    assert _view(result) == _view(expected)


def test_a_skipped_test_gives_no_outcome_on_either_path(tmp_path):
    suites = tmp_path / "suites_with_a_skip"  # its own package name: pytest imports suites by it
    shutil.copytree(ROOT / "autograder" / "unit" / "suites", suites, ignore=shutil.ignore_patterns("__pycache__"))
    path = suites / "test_simple_attention.py"
    text = path.read_text()
    first = "    def test_values(self, check):\n"
    assert first in text
    docstring, body = text.split("\n", 1)
    skipped = body.replace(first, first + "        pytest.skip('not this term')\n", 1)
    path.write_text(docstring + "\nimport pytest\n" + skipped)
    course = tmp_path / "course.yml"
    course.write_text((ROOT / "course.yml").read_text()
                      .replace("solutions: solutions", f"solutions: {ROOT / 'solutions'}")
                      .replace("suites: autograder/unit/suites", f"suites: {suites}"))
    with Grader(course) as g:
        assert g.tests is not None
        direct = _grade(g, CORPUS / "correct_einsum")
        g.tests = None
        through_pytest = _grade(g, CORPUS / "correct_einsum")
    assert _view(direct) == _view(through_pytest)
    values = [t for t in direct["tests"] if t["name"].startswith("simple_attention.attention_scores values")]
    assert values and values[0]["score"] == 0 and direct["score"] == 80
