"""One pair of outcome values (``autograder/outputs/outcomes.py``) from the hidden suites' plugin to results.json
and the page, and misconception ids that travel from the diagnosis, never read back from the words."""
from __future__ import annotations


from autograder.grading.suites import gradescope_results
from autograder.grading.suites.plugin import GradingPlugin
from autograder.course import load_course
from autograder.feedback.catalogue import hint, likely_line
from autograder.outputs.outcomes import CountOutcome, StepOutcome, hints_of
from autograder.outputs.verdict import FAILED, PASSED, StepFailure, Verdict
from autograder.pages import cards, feedback_page

from .conftest import ROOT

STEP = "trainable_attention.scaled_attention_weights"


def _graded(lines: list) -> tuple[dict, dict]:
    """results.json and the outcomes of a submission whose [values] count failed with ``lines``."""
    course = load_course(ROOT / "course.yml")
    plugin = GradingPlugin(course, reference=None, student=None)

    def fails():
        raise StepFailure(STEP, "values", "book", Verdict(FAILED, lines))

    plugin.run_test(STEP, "values", fails, None, "values")
    plugin.run_test(STEP, "gradients", lambda: None, None, "gradients")
    return gradescope_results.build(course, plugin.outcomes), plugin.outcomes


def test_an_id_goes_from_the_diagnosis_to_the_outcome_the_tags_and_the_page():
    result, outcomes = _graded(["output: values differ at 36 of 36 entries", likely_line(hint("missing-scaling"))])
    values, gradients = outcomes[(STEP, "values")], outcomes[(STEP, "gradients")]
    assert isinstance(values, CountOutcome) and values.misconceptions == ("missing-scaling",)
    assert values.likely == ("forgot the 1/sqrt(d_k) scaling",) and values.case == "book"
    assert (values.points, values.max_points, values.public) == (0.0, 1.0, True)
    assert (gradients.status, gradients.points, gradients.misconceptions) == (PASSED, 1.0, ())
    tags = {t["name"].split(":")[0]: t["tags"] for t in result["tests"]}
    assert "misconception:missing-scaling" in tags[f"{STEP} values"]
    assert not any(t.startswith("misconception:") for t in tags[f"{STEP} gradients"])
    [card] = [c for c in cards.from_results(result, outcomes) if c.step == STEP]
    assert isinstance(card, StepOutcome) and card.misconceptions == ["missing-scaling"]
    assert '<p class="likely">likely: forgot the 1/sqrt(d_k) scaling</p>' in feedback_page.page([card], {}, "x")


def test_control_likely_words_in_a_message_are_no_diagnosis():
    """A "likely: " line that is only words (a student's exception message says it) gives no id, no tag and no
    hint box: nothing reads misconceptions back out of the prose."""
    result, outcomes = _graded(["your code raised ValueError during call: oops",
                                "likely: forgot the 1/sqrt(d_k) scaling"])
    values = outcomes[(STEP, "values")]
    assert "likely: forgot the 1/sqrt(d_k) scaling" in values.feedback  # the words are still shown as said
    assert values.misconceptions == () and values.likely == ()
    assert not any(t.startswith("misconception:") for test in result["tests"] for t in test["tags"])
    [card] = [c for c in cards.from_results(result, outcomes) if c.step == STEP]
    assert '<p class="likely">' not in feedback_page.page([card], {}, "x")


def test_hints_of_keeps_each_id_once_in_order():
    lines = ["plain", likely_line(hint("transposed")), likely_line(hint("missing-scaling", "times 1.414 (= sqrt(2))")),
             likely_line(hint("transposed"))]
    ids, words = hints_of(lines)
    assert ids == ("transposed", "missing-scaling")
    assert words[1:] == ("times 1.414 (= sqrt(2))", "your result is the transpose of the expected one: check the order "
                                                    "of a matrix product or .T")
