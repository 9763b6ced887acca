"""The feedback page as a student reads it: what failed first, with links; the passed steps
folded; titles that break between an identifier's parts; captions in sentences; the row-sum strip's numbers
readable on every colour. In-process, on the page's HTML and the picture's pixels (the same page opened in
Chromium: tests/system/test_feedback_browser.py)."""
from __future__ import annotations

import io
import re
from unittest import mock

import torch

from autograder.feedback.tolerance import Tolerance
from autograder.grading import evidence
from autograder.outputs.outcomes import CountOutcome
from autograder.pages import cards, feedback_page, gradescope_html, heatmaps

TOL = Tolerance(1e-4, 1e-5)


def weights(seed=0, n=6, after=False):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(n, n, generator=g)
    upper = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
    if after:  # masked after the softmax, rows not renormalized: their sums fall below 1
        return torch.softmax(scores, -1).masked_fill(upper, 0.0)
    return torch.softmax(scores.masked_fill(upper, -torch.inf), -1)


def result_of(statuses: dict[str, str]) -> dict:
    tests = []
    for i, (step, status) in enumerate(statuses.items(), start=1):
        tests.append({"name": f"{step} values: Title {step.split('.')[-1]}", "number": f"{i}.1",
                      "score": 2 if status == "passed" else 0,
                      "max_score": 2, "status": status, "visibility": "visible", "tags": [],
                      "output": (f"{step} [values] case 'book': failed" if status != "passed"
                                 else f"{step} [values]: passed")})
    return {"score": 0, "output": "Score: x", "tests": tests}


STEPS = {f"simple_attention.step_{i}": "passed" for i in range(6)}
STEPS["multihead_attention.MultiHeadAttentionWrapper"] = "failed"
STEPS["causal_attention.causal_attention_weights"] = "failed"


def test_the_page_leads_with_what_failed_and_folds_what_passed():
    step_cards = cards.from_results(result_of(STEPS))
    html = feedback_page.page(step_cards, {}, "Feedback: x")
    listed = re.search(r'<nav class="failed-list"[^>]*><h2>What failed: 2 of 8 step\(s\)</h2>(.*?)</nav>', html, re.S)
    assert listed, html[:2000]
    links = re.findall(r'<a href="#([^"]+)">', listed.group(1))
    assert links == ["multihead_attention.MultiHeadAttentionWrapper", "causal_attention.causal_attention_weights"]
    for step in links:  # each link finds its card, and the failed cards come before any passed one
        assert f'<section class="card failed" id="{step}">' in html
    assert html.index("What failed") < html.index('<section class="card')
    folded = re.search(r'<details class="passed-steps"><summary>6 step\(s\) passed: show them</summary>(.*?)</details>',
                       html, re.S)
    assert folded and folded.group(1).count('<section class="card passed"') == 6
    assert '<section class="card passed"' not in html.replace(folded.group(0), "")  # none outside the fold
    # the control: a page on which everything passed lists no failure, says so, and folds every card
    all_passed = feedback_page.page(cards.from_results(result_of(dict.fromkeys(STEPS, "passed"))), {}, "x")
    assert "Nothing: every step passed." in all_passed and "<li>" not in all_passed
    assert "<summary>8 step(s) passed: show them</summary>" in all_passed


def test_gradescope_output_leads_with_what_failed_too():
    step_cards = cards.from_results(result_of(STEPS))
    html = gradescope_html.embed(result_of(STEPS), step_cards, {})["output"]
    assert (html.index("What failed: 2 of 8") < html.index("<pre class=\"summary\">")
            < html.index('<section class="card'))


def test_titles_break_between_an_identifiers_parts_never_inside_a_word():
    html = feedback_page.page(cards.from_results(result_of(STEPS)), {}, "x")
    assert "<h2>multihead_<wbr>attention.<wbr>MultiHeadAttentionWrapper: Title MultiHeadAttentionWrapper</h2>" in html
    assert "<h2>simple_<wbr>attention.<wbr>step_<wbr>0: Title step_<wbr>0</h2>" in html
    assert "overflow-wrap:anywhere" not in html and "word-break:break-all" not in html
    assert re.search(r"\.card h2\{overflow-wrap:normal;word-break:normal", html)
    assert 'id="multihead_attention.MultiHeadAttentionWrapper"' in html  # anchors keep the plain name


def _failing_page(exp, mine, step="causal_attention.causal_attention_weights", case=None):
    case = case or {"name": "book", "judge": "equal", "fields": ["output"], "request": {}}
    ev = evidence.collect(step, case, {"output": exp}, {"ok": True, "output": mine}, TOL, True)
    result = result_of({step: "failed"})
    step_cards = cards.from_results(result, {(step, "values"): CountOutcome(step, "values", "failed", evidence=ev)})
    return feedback_page.page(step_cards, feedback_page.draw_pictures(step_cards), "x")


def test_captions_read_as_sentences():
    weights_page = _failing_page(weights(), weights(after=True))
    caption = re.search(r"<figcaption>(.*?)</figcaption>", weights_page).group(1)
    assert caption == ("Output of case &#x27;book&#x27;. From left to right: the expected values, yours on the same "
                       "colour scale, and yours − expected (red where yours is too high, blue where it is too low). On "
                       "the right, each row&#x27;s sum, expected and yours: attention weights sum to 1.")
    context = _failing_page(torch.rand(1, 6, 2), torch.rand(1, 6, 2), step="causal_attention.CausalAttention")
    caption = re.search(r"<figcaption>(.*?)</figcaption>", context).group(1)
    assert "row" not in caption and caption.endswith("too low).")  # no strip: not mentioned
    for text in (weights_page, context):  # no empty list item, no stray punctuation
        words = re.search(r"<figcaption>(.*?)</figcaption>", text).group(1)
        assert not re.search(r", ,|\), \.|\)\s*\.\s*\.|\s[,.;]", words), words
        assert all(s[:1].isupper() for s in re.split(r"(?<=\.) ", words)), words


def test_a_wrappers_caption_says_one_row_of_panels_per_head():
    wrapper = {"name": "two heads", "judge": "equal", "fields": ["output"], "request": {"init_args": [3, 2, 6, 0.0, 2]}}
    ctx = torch.rand(2, 6, 4)
    html = _failing_page(ctx, ctx * 2, step="multihead_attention.MultiHeadAttentionWrapper", case=wrapper)
    assert "One row of panels per head (2 shown)." in html
    mha = _failing_page(ctx, ctx * 2, step="multihead_attention.MultiHeadAttention")  # out_proj mixed its heads
    assert "per head" not in re.search(r"<figcaption>(.*?)</figcaption>", mha).group(1)


def _strip_contrasts(png: bytes, cells: list) -> list[float]:
    """For each written cell of the strip: the contrast between its background and its darkest or lightest
    pixel, whichever differs most (the core of its digits), as read off the PNG."""
    import numpy as np  # noqa: PLC0415 - imported on first use: numpy is slow to load
    from PIL import Image  # noqa: PLC0415 - imported on first use

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float64) / 255
    out = []
    for (x0, y0, x1, y1), background, _ in cells:
        cell = img[y0 + 2:y1 - 1, x0 + 2:x1 - 1].reshape(-1, 3)
        out.append(max(heatmaps.contrast(px, background) for px in cell))
    return out


def test_the_row_sums_are_readable_on_every_colour_of_the_strip():
    ev = {"expected": weights().unsqueeze(0).double(), "yours": weights(after=True).unsqueeze(0).double()}
    cells: list = []
    png = heatmaps.draw(ev, cells)
    assert len(cells) == 12 and {colour for _, _, colour in cells} == {"black", "white"}  # dark cells and light ones
    contrasts = _strip_contrasts(png, cells)
    assert min(contrasts) >= 4.5, contrasts  # WCAG AA, on each cell
    # the control: black on every cell (as before) is unreadable on the dark ones
    with mock.patch.object(heatmaps, "text_colour", lambda background: "black"):
        black_cells: list = []
        black = _strip_contrasts(heatmaps.draw(ev, black_cells), black_cells)
    assert min(black) < 3, black


def test_black_or_white_is_chosen_by_the_cells_luminance():
    assert heatmaps.text_colour((0.2, 0.1, 0.3, 1)) == "white" and heatmaps.text_colour((0.95, 0.95, 0.9, 1)) == "black"
    from autograder.pages.colormaps import Colormap  # noqa: PLC0415 - imported on first use: Pillow's side of the pages

    for x in torch.linspace(0, 1, 41).tolist():  # every colour of the strip's map reads at 4.5:1 or better
        background = Colormap("PuOr")(x)
        ink = (0, 0, 0) if heatmaps.text_colour(background) == "black" else (1, 1, 1)
        assert heatmaps.contrast(background, ink) >= 4.5, (x, background)
