"""For each case class, ``grade check`` and ``grade autograde`` agree on the same code. A
failing public check wherever autograde takes points (or the step's docstring says it plainly), and no failing
check where it takes none (a step shown blocked by the deducted one aside). The figures:
tests/support/check_vs_autograde.py."""
from __future__ import annotations

import pytest

from tests.support import check_vs_autograde as cva

SAMPLES = [sample for sample, _ in cva.CLASSES.values()]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("check-vs-autograde")
    outcomes = cva.run_all(folder)
    (folder / "table.md").write_text(cva.table(outcomes) + "\n")  # the figures, for a person to read
    return outcomes


@pytest.mark.parametrize("sample", SAMPLES)
def test_grade_check_and_autograde_agree(outcomes, sample):
    outcome = outcomes[sample]
    assert cva.disagreements(outcome) == [], cva.table({sample: outcome})
    if sample == "correct_mha_assert":  # the book's assert: full marks in both
        assert outcome.check_exit == 0 and outcome.autograde_score == outcome.autograde_max
    else:  # each sample is a bug autograde deducts: the agreement is not an empty one
        assert outcome.autograde_lost
    for step in outcome.autograde_lost:  # what the student reads names the step, in check's output too
        assert step in outcome.check_text


def test_what_check_says_of_the_encoding_and_the_output_limit_is_what_autograde_says(outcomes):
    latin1, prints = outcomes["latin1_comment"], outcomes["prints_100k"]
    said = "causal_attention.py is not UTF-8 text (byte 0xe9 on line 2)"
    assert said in latin1.check_text and said in latin1.autograde_top
    assert "not graded" in latin1.autograde_output["causal_attention.CausalAttention"]
    # no cascade: the module importing the refused file is graded beside what it should provide, in both (grade check
    # stages such a folder as grade autograde does); its wrapper, built on the refused CausalAttention, shows as blocked
    assert "multihead_attention.MultiHeadAttention" not in latin1.autograde_lost
    assert "multihead_attention.MultiHeadAttention" not in latin1.check_failing
    assert latin1.check_failing.get("multihead_attention.MultiHeadAttentionWrapper") == "blocked"
    assert "output" in prints.check_text and "limit" in prints.check_text
    assert any("output" in text and "limit" in text for text in prints.autograde_output.values())


def test_where_check_says_more_it_is_the_known_case_still(outcomes):
    # CHECK_SAYS_MORE lists the one place check fails a step autograde grades in full; when it is fixed, this says so
    for sample, steps in cva.CHECK_SAYS_MORE.items():
        assert (set(steps) <= set(outcomes[sample].check_failing)
                and not set(steps) & set(outcomes[sample].autograde_lost))


@pytest.mark.unit
def test_the_comparison_finds_disagreements():
    # control: disagreements the comparison must find (the book's loops: check 54/54, autograde -2 on attention_scores;
    # dropout in eval mode: the same on CausalAttention) are found as disagreements; the docstring exemption holds
    # only for the words the docstring has
    before = cva.Outcome("bug_book_loops_float32", check_score=54, check_max=54, check_exit=0,
                         autograde_lost={"simple_attention.attention_scores": 2.0})
    assert cva.disagreements(before) == ["simple_attention.attention_scores: autograde takes 2 points, grade check "
                                         "shows nothing"]
    after = cva.Outcome("bug_book_loops_float32", check_exit=1,
                        check_failing={"simple_attention.attention_scores": "failed"},
                        autograde_lost={"simple_attention.attention_scores": 2.0})
    assert cva.disagreements(after) == []
    gpt2 = cva.Outcome("bug_gpt2_dropout", autograde_lost={"multihead_attention.gpt2_small_attention": 1.0})
    assert cva.disagreements(gpt2) == []  # the docstring says "dropout 0.0"
    other = cva.Outcome("bug_gpt2_heads", autograde_lost={"multihead_attention.gpt2_small_attention": 1.0})
    assert len(cva.disagreements(other)) == 1  # no exemption for another sample
    extra = cva.Outcome("bug_normalize_abs", check_exit=1, check_failing={"simple_attention.normalize_sum": "failed",
                                                                          "simple_attention.softmax_naive": "failed"},
                        autograde_lost={"simple_attention.normalize_sum": 2.0})
    assert cva.disagreements(extra) == ["simple_attention.softmax_naive: grade check says failed, autograde takes "
                                        "no point"]
