"""The feedback page in a real headless Chromium, as a student sees it: the list of what
failed is at the top and its links reach the cards; the passed steps are folded until opened; no title
overflows its card or breaks inside a word; the row sums on the picture read on every colour. In-process
pages (no grading): the graded sample class is opened in tests/system/test_feedback_pages.py."""
from __future__ import annotations

import io
from unittest import mock

import pytest
import torch

from autograder.pages import cards, feedback_page, heatmaps

from tests.unit.test_feedback_layout import STEPS, _failing_page, _strip_contrasts, result_of, weights

LONG = "multihead_attention.an_identifier_long_enough_to_need_wrapping_on_a_narrow_screen_MultiHeadAttentionWrapper"


def _write(tmp_path, name, html):
    path = tmp_path / name
    path.write_text(html)
    return path


def _page(tmp_path, steps=STEPS):
    return _write(tmp_path, "page.html", feedback_page.page(cards.from_results(result_of(steps)), {}, "Feedback: x"))


def visible(view, selector):
    return view.page.evaluate(f"""() => Array.from(document.querySelectorAll({selector!r}))
        .map(e => e.checkVisibility() && e.getBoundingClientRect().height > 0)""")


def test_the_failure_list_is_on_the_first_screen_and_its_links_reach_the_cards(browser, tmp_path):
    view = browser.open(_page(tmp_path))
    assert view.console_errors == []
    first = view.page.evaluate("""() => { const nav = document.querySelector('nav.failed-list').getBoundingClientRect();
        const card = document.querySelector('section.card').getBoundingClientRect();
        return [nav.top, nav.bottom, card.top, innerHeight]; }""")
    nav_top, nav_bottom, card_top, screen = first
    assert nav_bottom < screen and nav_top < card_top, first  # on the first screen, above every card
    assert "What failed: 2 of 8 step(s)" in view.text()
    for step in ("causal_attention.causal_attention_weights", "multihead_attention.MultiHeadAttentionWrapper"):
        view.page.evaluate("() => window.scrollTo(0, 0)")
        view.page.locator("nav.failed-list a", has_text=step.split(".")[-1]).click()
        where = view.page.evaluate(f"""() => [location.hash,
            document.getElementById({step!r}).getBoundingClientRect().top, innerHeight]""")
        assert where[0] == "#" + step and 0 <= where[1] < where[2] / 2, where  # the card came to the top
    # the control: the link to a card that does not exist moves nothing (the check above can fail)
    view.page.evaluate("() => { window.scrollTo(0, 0); location.hash = '#no-such-step'; }")
    assert view.page.evaluate("() => scrollY") == 0


def test_passed_steps_are_folded_until_opened(browser, tmp_path):
    view = browser.open(_page(tmp_path))
    assert visible(view, "section.card.failed") == [True, True]
    assert visible(view, "section.card.passed") == [False] * 6  # folded
    assert "6 step(s) passed: show them" in view.text()
    view.page.locator("details.passed-steps > summary").click()
    assert visible(view, "section.card.passed") == [True] * 6  # the control: one click shows them


OVERFLOWS = """() => Array.from(document.querySelectorAll('section.card h2')).flatMap(h => {
    const card = h.closest('section').getBoundingClientRect(), box = h.getBoundingClientRect();
    const out = [];
    if (h.scrollWidth > h.clientWidth + 1 || box.right > card.right + 0.5) out.push(['overflows', h.textContent]);
    // each piece between break opportunities (a text node, split at spaces) stays on one line
    const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        let at = 0;
        for (const word of node.data.split(' ')) {
            if (word) {
                const range = document.createRange();
                range.setStart(node, at); range.setEnd(node, at + word.length);
                const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
                if (lines.size > 1) out.push(['broken', word]);
            }
            at += word.length + 1;
        }
    }
    return out; })"""


@pytest.mark.parametrize("width", [1280, 420])
def test_no_title_overflows_its_card_or_breaks_inside_a_word(browser, tmp_path, width):
    steps = {**STEPS, LONG: "failed"}
    view = browser.open(_page(tmp_path, steps))
    view.page.set_viewport_size({"width": width, "height": 900})
    view.page.locator("details.passed-steps > summary").click()
    assert view.page.evaluate(OVERFLOWS) == []
    if width < 500:  # the long title did wrap (between its parts): the check above had something to check
        lines = view.page.evaluate(f"""() => {{ const h = document.getElementById({LONG!r}).querySelector('h2');
            return Math.round(h.getBoundingClientRect().height / parseFloat(getComputedStyle(h).lineHeight)); }}""")
        assert lines >= 2, lines
        # the control: the old rule (break anywhere, and no break opportunities) breaks words mid-way
        view.page.evaluate("""() => { document.querySelectorAll('wbr').forEach(w => w.remove());
            const s = document.createElement('style'); s.textContent = '.card h2{overflow-wrap:anywhere}';
            document.head.append(s); }""")
        assert any(kind == "broken" for kind, _ in view.page.evaluate(OVERFLOWS))


def _strip_in_chromium(browser, tmp_path, name):
    """The row-sum strip's contrasts as Chromium draws the page: the picture screenshotted at its own size."""
    from PIL import Image  # noqa: PLC0415 - imported on first use

    ev = {"expected": weights().unsqueeze(0).double(), "yours": weights(after=True).unsqueeze(0).double()}
    cells: list = []
    heatmaps.draw(ev, cells)  # where the strip's cells are (the page draws the same picture again)
    view = browser.open(_write(tmp_path, f"{name}.html", _failing_page(weights(), weights(after=True))))
    assert view.broken_images() == []
    size = view.page.evaluate("""() => { const i = document.images[0]; const r = i.getBoundingClientRect();
        return [i.naturalWidth, i.naturalHeight, r.width, r.height]; }""")
    assert size[:2] == size[2:], size  # shown at its own size: the cells' pixels are where draw put them
    shot = view.page.locator("img").screenshot()
    png = io.BytesIO()
    Image.open(io.BytesIO(shot)).convert("RGB").save(png, format="png")
    return _strip_contrasts(png.getvalue(), cells)


def test_the_row_sums_read_on_every_colour_in_chromium(browser, tmp_path):
    contrasts = _strip_in_chromium(browser, tmp_path, "strip")
    assert len(contrasts) == 12 and min(contrasts) >= 4.5, contrasts
    # the control: black everywhere, drawn anew (the page's pictures this process drew are kept: heatmaps._drawn)
    with mock.patch.object(heatmaps, "text_colour", lambda background: "black"), mock.patch.object(heatmaps, "_drawn",
                                                                                                   {}):
        black = _strip_in_chromium(browser, tmp_path, "black")
    assert min(black) < 3, black
    assert torch.tensor(contrasts).min() > torch.tensor(black).min()
