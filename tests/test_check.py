"""`grade check`: a student's local check, from a copy with no solutions and no hidden suites."""
from __future__ import annotations

import json
import shutil

import pytest

from .conftest import CORPUS, ROOT, run_grade


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory):
    """What a student has: exercises/ and the autograder package without hidden suites or solutions."""
    home = tmp_path_factory.mktemp("student")
    shutil.copytree(ROOT / "exercises", home / "exercises")
    shutil.copytree(ROOT / "autograder", home / "autograder",
                    ignore=shutil.ignore_patterns("suites", "__pycache__", "assign"))
    return home


def check(home, *args):
    env = {"PYTHONPATH": str(home)}
    return run_grade("check", *args, cwd=home, env=env, timeout=300)


def test_untouched_stubs_are_not_attempted(student_copy):
    result = check(student_copy, "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["score"] == 0 and data["max_score"] > 0
    assert {s["status"] for s in data["steps"]} == {"not attempted"}
    assert not (student_copy / "autograder" / "suites").exists() and not (student_copy / "solutions").exists()


@pytest.mark.numerics
def test_a_correct_submission_passes_every_public_check(student_copy):
    result = check(student_copy, str(CORPUS / "correct_loops"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAILED" not in result.stdout and "not attempted" not in result.stdout
    assert "public checks" in result.stdout


def test_a_bug_gets_a_teaching_message(student_copy):
    result = check(student_copy, str(CORPUS / "bug_softmax_dim0"))
    assert result.returncode == 1
    assert "simple_attention.all_attention_weights" in result.stdout
    assert "FAILED" in result.stdout
    assert "expected row" in result.stdout and "got      row" in result.stdout
    assert "likely: softmax over dim 0 (columns) instead of the last dim" in result.stdout


def test_step_filter_and_missing_folder(student_copy):
    result = check(student_copy, str(CORPUS / "correct_einsum"), "--step", "causal_attention")
    assert result.returncode == 0
    assert "causal_attention.CausalAttention" in result.stdout and "simple_attention" not in result.stdout
    missing = check(student_copy, str(student_copy / "nope"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr
