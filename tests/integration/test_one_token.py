"""Module steps have a public case with one token (T = 1): a squeeze() that drops the size-1 dims
is harmless for a batch of one (the [T, T] weights broadcast over it) and collapses the token dims when T = 1.
The corpus's bug_causal_squeeze_one_token passed every check before; grade check and grade autograde now agree
on it (tests/integration/test_check_agrees.py), and it costs CausalAttention only
(tests/integration/test_autograde_corpus.py)."""
from __future__ import annotations

import pytest

from autograder.check.public_cases import load

from .conftest import CORPUS, run_grade

MODULE_STEPS = ["causal_attention.CausalAttention", "multihead_attention.MultiHeadAttentionWrapper",
                "multihead_attention.MultiHeadAttention"]
CASE = "one token (T = 1): the book batch's first token (2, 1, 3)"


@pytest.mark.unit
def test_every_module_step_has_a_public_one_token_case():
    cases = [c for c in load()["cases"] if c["name"] == CASE]
    assert sorted(c["step"] for c in cases) == sorted(MODULE_STEPS)
    for case in cases:
        assert case["count"] == "forward" and case["public"] and not case["request"]["train"]
        assert tuple(case["request"]["forward_args"][0].shape) == (2, 1, 3)


@pytest.mark.parametrize("sample, fails", [("bug_causal_squeeze_one_token", True), ("correct_loops", False)])
def test_grade_check_names_the_one_token_case(tmp_path, sample, fails):
    result = run_grade("check", str(CORPUS / sample), "--step", "CausalAttention", cwd=tmp_path)
    assert result.returncode == (1 if fails else 0), result.stdout + result.stderr
    assert (f'case "{CASE}"' in result.stdout) == fails  # the control: a correct sample passes it
