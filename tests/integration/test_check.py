"""`grade check`: a student's local check, from a copy with no solutions and no hidden suites."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import CORPUS, ROOT, run_grade


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory):
    """What a student has: exercises/ and the autograder package without hidden suites or solutions."""
    home = tmp_path_factory.mktemp("student")
    shutil.copytree(ROOT / "exercises", home / "exercises")
    shutil.copytree(ROOT / "autograder", home / "autograder",
                    ignore=shutil.ignore_patterns("unit", "__pycache__", "assign"))
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


def where_autograder_is(cwd, env):
    """The folder of the ``autograder`` package that an interpreter started in ``cwd`` with ``env`` imports."""
    code = "import autograder; print(autograder.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env={**os.environ, **env},
                         capture_output=True, text=True, timeout=60)
    return Path(out.stdout.strip()).parent


def test_the_checks_run_the_students_copy(student_copy):
    """``check`` here runs the copy, which has no hidden suites and no solutions, not the kit's own package (which
    the editable install's finder offers too). The control: started elsewhere, the kit's own package is found."""
    found = where_autograder_is(student_copy, {"PYTHONPATH": str(student_copy)})
    assert found == student_copy / "autograder"
    assert not (found / "unit").exists() and not (found.parent / "solutions").exists()
    assert where_autograder_is(student_copy.parent, {"PYTHONPATH": ""}) == ROOT / "autograder"


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


# -- what a student hits in the first days --------------------------------------------------------------
def test_an_unknown_step_says_the_nearest_names(student_copy):
    result = check(student_copy, "--step", "causal_atention")
    assert result.returncode == 2 and "did you mean causal_attention" in result.stderr
    result = check(student_copy, "--step", "nosuch")
    assert result.returncode == 2 and "no such step or module" in result.stderr and "0/0" not in result.stdout


def test_a_file_is_checked_in_its_folder(student_copy):
    result = check(student_copy, str(CORPUS / "correct_loops" / "simple_attention.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "simple_attention.attention_scores" in result.stdout and "trainable_attention" not in result.stdout
    assert "no such folder" not in result.stderr


def test_a_step_is_blocked_not_failed_by_the_step_it_builds_on(student_copy):
    result = check(student_copy, str(CORPUS / "bug_param_order"), "--step", "trainable_attention.transfer_weights")
    assert "trainable_attention.transfer_weights" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("trainable_attention.transfer_weights"))
    assert "blocked" in row and "fix trainable_attention.SelfAttention_v1 first" in row
    assert "expected 'W_query', got 'W_key'" not in result.stdout
    wrapper = check(student_copy, str(CORPUS / "bug_mask_not_sliced"), "--json")
    steps = {s["step"]: s for s in json.loads(wrapper.stdout)["steps"]}
    assert steps["causal_attention.CausalAttention"]["status"] == "failed"
    assert steps["multihead_attention.MultiHeadAttentionWrapper"]["status"] == "blocked"
    assert steps["multihead_attention.MultiHeadAttentionWrapper"]["blocked_by"] == "causal_attention.CausalAttention"


def test_a_syntax_error_is_shown_once_with_the_steps_it_blocks(student_copy):
    result = check(student_copy, str(CORPUS / "syntax_error"))
    assert result.returncode == 1
    assert result.stdout.count("SyntaxError") == 1, result.stdout
    blocks = next(line for line in result.stdout.splitlines() if "it blocks:" in line)
    assert blocks.count(".") >= 3  # several steps of the module


def test_students_see_what_their_code_printed_under_the_step(student_copy, tmp_path):
    folder = tmp_path / "printing"
    shutil.copytree(CORPUS / "bug_no_scaling", folder)
    path = folder / "trainable_attention.py"
    text = path.read_text()
    anchor = "def scaled_attention_weights("
    head, rest = text.split(anchor, 1)
    signature, body = rest.split(":\n", 1)
    path.write_text(head + anchor + signature + ":\n    print('DEBUG scores', flush=False)\n" + body)
    result = check(student_copy, str(folder), "--step", "trainable_attention.scaled_attention_weights")
    assert "your code printed while trainable_attention.scaled_attention_weights was checked" in result.stdout
    assert "| DEBUG scores" in result.stdout
