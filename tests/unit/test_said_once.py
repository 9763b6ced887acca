"""Said once, and only what is new: the grid's precision, redaction that keeps
identifiers, and a submission or module not graded said once with a pointer on each of its tests."""
from __future__ import annotations

import inspect
import re

import torch

from autograder.grading.suites import gradescope_results, graded
from autograder.grading.suites.plugin import FAILED
from autograder.course import load_course
from autograder.feedback.gradients import said_once
from autograder.feedback.redact import KEPT_NAMES, redact_text
from autograder.outputs.outcomes import CountOutcome, StepOutcome
from autograder.pages import feedback_page, gradescope_html, terminal_grid

from .conftest import ROOT


def grid(expected: torch.Tensor, yours: torch.Tensor) -> str:
    ev = {"public": True, "what": "output", "shape": list(expected.shape), "expected": expected[None],
          "yours": yours[None]}
    return terminal_grid.render(ev, color=False)


def test_the_grid_widens_its_precision_until_differing_entries_differ_on_screen():
    expected = torch.tensor([[0.1234560, 0.5], [0.25, 0.75]], dtype=torch.float64)
    yours = expected.clone()
    yours[0, 0] += 3e-5  # differs beyond the tolerance, but not at three decimals
    text = grid(expected, yours)
    assert "0.12346 " in text and "0.12349*" in text
    assert terminal_grid.decimals(expected, yours) == 5


def test_control_at_three_decimals_the_marked_entry_reads_the_same():
    expected = torch.tensor([[0.1234560, 0.5], [0.25, 0.75]], dtype=torch.float64)
    yours = expected.clone()
    yours[0, 0] += 3e-5
    assert f"{float(expected[0, 0]):.3f}" == f"{float(yours[0, 0]):.3f}"  # what the grid printed before
    assert terminal_grid.decimals(expected, expected + 0.01) == 3  # and still prints when they differ there


def test_redaction_keeps_identifiers_and_masks_numbers():
    said = redact_text("trainable_attention.py defines no SelfAttention_v2; x[0] = 0.1234 (float32)", public=False)
    assert said == "trainable_attention.py defines no SelfAttention_v2; x[#] = #.#### (float32)"
    assert redact_text("SelfAttention_v22 leaks 22", public=False) == "SelfAttention_v## leaks ##"  # control


def test_every_name_of_the_unit_with_a_digit_is_kept():
    course = load_course(ROOT / "course.yml")
    names = {part for step in course.steps for part in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", step)}
    assert {n for n in names if re.search(r"\d", n)} <= KEPT_NAMES


def test_a_submission_not_graded_is_said_once_with_a_pointer_on_each_test():
    course = load_course(ROOT / "course.yml")
    found = graded.rejected(course, "the zip archive is corrupt (not a zip file)", cause="corrupt_zip")
    result = gradescope_results.build(course, found.outcomes, notes=found.notes)
    assert result["output"].count("the zip archive is corrupt") == 1
    outputs = {t["output"] for t in result["tests"]}
    assert outputs == {"not graded; the message at the top of your feedback says why"}
    assert not any("corrupt" in o for o in outputs)


def test_an_unreadable_module_is_said_once_and_its_tests_point_to_it():
    course = load_course(ROOT / "course.yml")
    message = "simple_attention.ipynb is not a valid notebook: its JSON is broken at line 3, column 1"
    outcomes = {(step, count): CountOutcome(step, count, FAILED, f"{step} [{count}] case 'x': failed\n  {message}")
                for step, spec in course.steps.items() for count in spec.counts}
    notes = gradescope_results.unreadable_modules(course, outcomes, {"simple_attention": {"type": "MalformedNotebook",
                                                                                          "message": message}})
    assert len(notes) == 1 and notes[0].startswith(f"Not graded: {message} (steps simple_attention.")
    mine = [o.feedback for (step, _), o in outcomes.items() if step.startswith("simple_attention.")]
    assert mine and set(mine) == {gradescope_results.NOT_GRADED}
    others = [o.feedback for (step, _), o in outcomes.items() if not step.startswith("simple_attention.")]
    assert others and all(message in f for f in others)  # control: other modules' words untouched


def test_the_gradescope_total_is_labelled_as_the_public_counts():
    cards = [StepOutcome("s.a", "A", (CountOutcome("s.a", "values", "passed", "", 2, 2, True),
                                      CountOutcome("s.a", "hidden", "failed", "", 0, 3, False)))]
    html = gradescope_html.embed({"output": "Score: 2 / 5", "tests": []}, cards, {})["output"]
    assert "<strong>2 / 2 points on the public counts (hidden counts are listed with the tests)</strong>" in html
    # control: with no hidden count the total is the whole score, unlabelled
    whole = gradescope_html.embed({"output": "Score: 2 / 2", "tests": []},
                                  cards[:0] + [StepOutcome("s.a", "A", cards[0].counts[:1])], {})
    assert "<strong>2 / 2 points</strong>" in whole["output"]


def test_the_caption_reads_as_a_sentence():
    source = inspect.getsource(feedback_page._count)
    assert ", , and" not in source and "too low), " not in source  # control: the words a student once read


# -- a [gradients] count on a case already shown under [forward]: only what is new ------
def _said(lines_forward, lines_gradients):
    said = {}
    assert said_once(said, "m.MHA", "forward", "book batch", lines_forward) == lines_forward
    return said_once(said, "m.MHA", "gradients", "book batch", lines_gradients)


OUTPUT_BLOCK = ["output: values differ at 48 of 48 entries; first at [0, 0, 0]",
                "  expected row [0, 2]: [-0.0147, 0.3259]", "  got      row [0, 2]: [-0.2059, 0.1190]",
                "likely: out_proj is created but never applied"]


def test_the_gradients_count_points_to_the_forward_count_and_says_only_what_is_new():
    grads = [*OUTPUT_BLOCK, "gradient w.r.t. the input x: values differ at 36 of 36 entries",
             "  expected row [1, 0]: [0.2634]", "parameter out_proj.weight gets no gradient: it is unused in forward"]
    assert _said(OUTPUT_BLOCK, grads) == [
        "the output of this case is wrong as shown under [forward]; the gradients differ too: they follow from the "
        "output, so fix the output first",
        "parameter out_proj.weight gets no gradient: it is unused in forward"]


def test_control_another_case_or_another_output_is_said_in_full():
    grads = [*OUTPUT_BLOCK, "the gradients differ too; they follow from the output, so fix the output first"]

    said = {}
    said_once(said, "m.MHA", "forward", "book batch", OUTPUT_BLOCK)
    assert said_once(said, "m.MHA", "gradients", "wars input", grads) == grads  # not the same case
    other = ["output: values differ at 2 of 48 entries", *OUTPUT_BLOCK[1:]]
    assert _said(other, grads) == grads  # the forward count said something else: nothing to point to


# -- Gradescope's step cards and feedback.html agree on each step's points ----------------
def _card_line(html: str, step: str) -> str:
    section = html.split(f'id="{step}"', 1)[1]
    return re.sub(r"<[^>]+>", "", section.split("</p>", 1)[0].split("<p>", 1)[1])


def test_gradescope_s_card_and_the_page_say_the_same_public_points():
    """Why they disagreed: Gradescope's always-visible output keeps only a step's public counts (2/2), the page
    all of them (3/3), and neither said which. Now both say the public counts' points, and which they are."""
    def cards():
        return [StepOutcome("s.a", "A", (CountOutcome("s.a", "values", "passed", "", 1, 1, True),
                                         CountOutcome("s.a", "gradients", "passed", "", 1, 1, True),
                                         CountOutcome("s.a", "randomized", "passed", "", 1, 1, False)))]

    page = feedback_page.page(cards(), {}, "Feedback")
    scope = gradescope_html.embed({"output": "Score: 3 / 3", "tests": []}, cards(), {})["output"]
    assert _card_line(page, "s.a") == "passed, 3/3 points (2/2 on its public counts, 1/1 on its hidden ones)"
    assert _card_line(scope, "s.a") == ("passed, 2/2 points on its public counts; its 1 hidden count(s) (1 point(s)) "
                                        "are shown with the tests once grades are published")
    # control: a step with public counts only reads the same on both, unlabelled
    only = [StepOutcome("s.b", "B", (CountOutcome("s.b", "values", "passed", "", 2, 2, True),))]
    assert _card_line(feedback_page.page(only, {}, "F"), "s.b") == "passed, 2/2 points"
    assert _card_line(gradescope_html.embed({"output": "", "tests": []}, only, {})["output"],
                      "s.b") == "passed, 2/2 points"
