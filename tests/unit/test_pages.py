"""The pieces of the feedback pages, one by one: pictures, evidence, what hidden cases may show, misconception
ids, the regrade table, the terminal grid, the Gradescope HTML and its size."""
from __future__ import annotations

import io
import json
import math

from unittest import mock

import torch

from autograder.feedback.compare import compare_values
from autograder.feedback.tolerance import Tolerance
from autograder.outputs.outcomes import CountOutcome
from autograder.outputs.verdict import FAILED, Verdict
from autograder.grading import evidence
from autograder.pages import cards, changes, feedback_page, gradescope_html, heatmaps, misconceptions
from autograder.pages import terminal_grid

TOL = Tolerance(1e-4, 1e-5)


def causal_weights(seed: int = 0, n: int = 6) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(n, n, generator=g)
    return torch.softmax(scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf), -1)


def mask_after_softmax(seed: int = 0, n: int = 6) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(n, n, generator=g)
    return torch.softmax(scores, -1).masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), 0.0)


def case_of(expected: torch.Tensor, name: str = "book") -> dict:
    return {"name": name, "judge": "equal", "fields": ["output"], "request": {}}


def image(png: bytes):
    """A PNG as an array of 0-1 floats (rows, columns, channels)."""
    import numpy as np  # noqa: PLC0415 - imported on first use: numpy is slow to load
    from PIL import Image  # noqa: PLC0415 - imported on first use

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float64) / 255


def test_a_failing_public_case_keeps_both_arrays_and_a_hidden_one_only_its_counts():
    exp, mine = causal_weights(), mask_after_softmax()
    public = evidence.collect("causal_attention.x", case_of(exp), {"output": exp}, {"ok": True, "output": mine}, TOL,
                              True)
    assert torch.equal(public["expected"][0], exp.double()) and torch.equal(public["yours"][0], mine.double())
    assert public["differ"] == int((~TOL.close(mine, exp)).sum()) > 0
    hidden = evidence.collect("causal_attention.x", case_of(exp, "randomized 3"), {"output": exp},
                              {"ok": True, "output": mine}, TOL, False)
    assert set(hidden) == {"public", "what", "shape", "dtype", "differ", "total"}
    assert hidden["shape"] == [6, 6] and hidden["total"] == 36
    assert evidence.collect("s", case_of(exp), {"output": exp}, {"ok": True, "output": exp.clone()}, TOL, True) is None


def test_multi_head_evidence_has_one_panel_per_head():
    four = torch.rand(2, 3, 5, 5)  # batch, heads, tokens, tokens
    ev = evidence.collect("m.x", case_of(four), {"output": four}, {"ok": True, "output": four + 1}, TOL, True)
    assert ev["expected"].shape == (3, 5, 5) and ev["heads"] == 3
    wrapper = {"name": "c", "judge": "equal", "request": {"init_args": [3, 2, 6, 0.0, 2]}}
    ctx = torch.rand(2, 6, 4)
    ev = evidence.collect("multihead_attention.MultiHeadAttentionWrapper", wrapper, {"output": ctx},
                          {"ok": True, "output": ctx * 2}, TOL, True)
    assert ev["expected"].shape == (2, 6, 2)  # two heads' context vectors, side by side in the output
    one, two = (image(heatmaps.draw(evidence.collect("m.x", case_of(t), {"output": t}, {"ok": True, "output": t * 2},
                                                     TOL, True)))
                for t in (torch.rand(1, 1, 5, 5), torch.rand(1, 2, 5, 5)))
    assert two.shape[0] > 1.6 * one.shape[0]  # a row of panels per head


def test_the_causal_triangle_is_outlined_where_the_expected_weights_are_masked():
    assert heatmaps.masked(causal_weights().unsqueeze(0).double())
    assert not heatmaps.masked(torch.softmax(torch.randn(1, 6, 6), -1).double())
    assert not heatmaps.masked(torch.zeros(1, 6, 6, dtype=torch.float64))
    scores = torch.randn(6, 6).masked_fill(torch.triu(torch.ones(6, 6, dtype=torch.bool), 1), -torch.inf)
    assert heatmaps.masked(scores.unsqueeze(0).double())  # masked scores (-inf) too
    masked = causal_weights().unsqueeze(0).double()
    unmasked = masked.clone()
    unmasked[0, 0, 5] = 1e-3  # one future token not masked: no triangle to outline
    yours = mask_after_softmax().unsqueeze(0).double()

    def black(expected):
        img = image(heatmaps.draw({"expected": expected, "yours": yours}))
        return int((img[..., :3] < 0.1).all(-1).sum())

    assert black(masked) > black(unmasked) + 3 * 6 * 5  # the staircase, in each of the three panels


def test_the_row_sum_strip_shows_rows_that_do_not_sum_to_one():
    ev = {"expected": causal_weights().unsqueeze(0).double(), "yours": mask_after_softmax().unsqueeze(0).double()}
    with_strip = image(heatmaps.draw(ev))
    context = {"expected": torch.rand(1, 6, 2, dtype=torch.float64), "yours": torch.rand(1, 6, 2, dtype=torch.float64)}
    without = image(heatmaps.draw(context))  # context vectors: rows need not sum to 1, no strip
    assert with_strip.shape[1] > without.shape[1]


def test_the_colour_tables_are_matplotlibs():
    """The pictures keep matplotlib's colours without importing it: each table, and a value's lookup (below, inside,
    above the scale, and no value at all), as matplotlib gives them."""
    import matplotlib  # noqa: PLC0415 - the reference the tables were taken from; the kit itself never imports it
    import numpy as np  # noqa: PLC0415 - imported on first use: numpy is slow to load

    from autograder.pages.colormaps import GREY, Colormap  # noqa: PLC0415 - imported on first use

    scaled = np.concatenate([np.linspace(-0.2, 1.2, 1001), [0.0, 1.0, 255 / 256, 1 / 256, np.nan]])
    for name in ("viridis", "RdBu_r", "PuOr"):
        theirs = matplotlib.colormaps[name].with_extremes(bad=np.array(GREY) / 255)(scaled)[:, :3] * 255
        ours = Colormap(name).rgb(scaled)
        assert np.abs(ours - theirs).max() <= 0.5, name
    assert np.abs(Colormap("viridis").rgb(scaled).astype(int) - Colormap("PuOr").rgb(scaled)).max() > 100  # the control


def test_the_strip_cells_are_where_the_picture_draws_them():
    """What the contrast checks read: each written cell of the row-sum strip is at the pixels given, in the
    colour given (its corners, away from the digits). Control: the boxes one cell to the left are not."""
    ev = {"expected": causal_weights().unsqueeze(0).double(), "yours": mask_after_softmax().unsqueeze(0).double()}
    cells: list = []
    img = image(heatmaps.draw(ev, cells))
    assert len(cells) == 12

    def corners_match(shift):
        for (x0, y0, x1, y1), background, _ in cells:
            for x, y in ((x0 + 1 - shift, y0 + 1), (x1 - 2 - shift, y1 - 2)):
                if (abs(img[y, x] - torch.tensor(background[:3]).numpy()) > 1 / 255 + 1e-9).any():
                    return False
        return True

    assert corners_match(0)
    width = cells[1][0][0] - cells[0][0][0]
    assert not corners_match(width)


def test_the_same_wrong_answer_is_drawn_once_per_process(monkeypatch):
    """Two students with the same misconception hand in the same numbers for the same public case: the picture is
    drawn once and given again, byte for byte. Control: one value, or the dtype, differing draws anew."""
    drawn = []

    def counted(evidence, strip_cells=None):
        drawn.append(evidence)
        return real(evidence, strip_cells)

    real = heatmaps._draw
    monkeypatch.setattr(heatmaps, "_draw", counted)
    monkeypatch.setattr(heatmaps, "_drawn", {})
    expected, yours = causal_weights(7).unsqueeze(0).double(), mask_after_softmax(7).unsqueeze(0).double()
    first = heatmaps.draw({"expected": expected, "yours": yours})
    again = heatmaps.draw({"expected": expected.clone(), "yours": yours.clone()})
    assert again == first and len(drawn) == 1
    assert first == real({"expected": expected, "yours": yours})  # what drawing it anew gives
    other = yours.clone()
    other[0, 3, 1] += 1e-12
    heatmaps.draw({"expected": expected, "yours": other})
    heatmaps.draw({"expected": expected, "yours": yours.float()})
    assert len(drawn) == 3


def test_the_page_shows_pictures_and_mismatches_for_public_cases_and_no_values_for_hidden_ones():
    exp, mine = causal_weights(), mask_after_softmax()
    secret = torch.full((4, 4), 0.123456789)
    public = evidence.collect("c.w", case_of(exp), {"output": exp}, {"ok": True, "output": mine}, TOL, True)
    hidden = evidence.collect("c.w", case_of(secret, "randomized"), {"output": secret},
                              {"ok": True, "output": secret * 3}, TOL, False)
    result = {"score": 0, "output": "Score: 0 / 3", "tests": [
        {"name": "c.w values: W", "number": "1.1", "score": 0, "max_score": 2, "status": "failed",
         "visibility": "visible",
         "output": "c.w [values] case 'book': failed\n"
                   "  likely: masked after the softmax without renormalizing the rows",
         "tags": ["c", "values", "failed"]},
        {"name": "c.w randomized: W", "number": "1.2", "score": 0, "max_score": 1, "status": "failed",
         "visibility": "after_published", "output": "c.w [randomized] case 'randomized': failed", "tags": []}]}
    graded = {("c.w", "values"): CountOutcome("c.w", "values", FAILED, evidence=public,
                                              likely=("masked after the softmax without renormalizing the rows",)),
              ("c.w", "randomized"): CountOutcome("c.w", "randomized", FAILED, evidence=hidden)}
    step_cards = cards.from_results(result, graded)
    pictures = feedback_page.draw_pictures(step_cards)
    assert list(pictures) == [("c.w", "values")]  # a picture for the public case only
    html = feedback_page.page(step_cards, pictures, "Feedback: x")
    assert html.count("<img ") == 1 and "<script" not in html and "http" not in html
    assert "likely: masked after the softmax without renormalizing the rows" in html
    assert f"{float(exp[1, 0]):.4f}" in html  # the mismatch table: a public value
    assert "16 of 16 entries (100%) differ" in html and "0.1234" not in html and "0.3703" not in html
    embedded = gradescope_html.embed(result, step_cards, pictures)
    assert embedded["output_format"] == "html" and embedded["test_output_format"] == "text"
    assert "randomized" not in embedded["output"]  # a hidden count is not on the always-visible page
    assert gradescope_html.pictures(embedded) == {"c.w values: W": pictures[("c.w", "values")]}
    # a picture that cannot be drawn is left out, and the page keeps its words and its table of mismatches
    with mock.patch.object(heatmaps, "draw", side_effect=ValueError("cannot convert float NaN to integer")):
        none = feedback_page.draw_pictures(step_cards)
    assert none == {}
    html = feedback_page.page(step_cards, none, "Feedback: x")
    assert html.count("<img ") == 0 and f"{float(exp[1, 0]):.4f}" in html and "likely: masked" in html


def test_results_json_stays_under_a_megabyte_however_many_cases_fail():
    exp, mine = causal_weights(n=48), mask_after_softmax(n=48)
    ev = evidence.collect("c.w", case_of(exp), {"output": exp}, {"ok": True, "output": mine}, TOL, True)
    tests = [{"name": f"c.w{i} values: W", "number": f"{i}.1", "score": 0, "max_score": 1, "status": "failed",
              "visibility": "visible", "output": "failed", "tags": []} for i in range(60)]
    result = {"score": 0, "output": "Score", "tests": tests}
    step_cards = cards.from_results(result, {(f"c.w{i}", "values"): CountOutcome(f"c.w{i}", "values", FAILED,
                                                                                  evidence=ev)
                                             for i in range(60)})
    pictures = feedback_page.draw_pictures(step_cards)
    assert pictures.get("__cut__")  # the budget ran out before the 60th picture
    embedded = gradescope_html.embed(result, step_cards, pictures)
    assert len(json.dumps(embedded, indent=2)) < gradescope_html.MAX_BYTES
    assert "picture left out to keep this page small" in embedded["output"]


def test_misconception_ids_travel_from_the_diagnosis_and_the_dashboard_says_what_the_student_read():
    expected = torch.softmax(torch.randn(2, 6, 6), dim=-1)
    label = "heads not merged back in the right order (transpose before view missing)"
    lines = compare_values(expected * 0 + 0.5, expected, Tolerance(1e-4, 1e-5), True, "output",
                           {label: expected * 0 + 0.5})
    verdict = Verdict(FAILED, lines)
    assert f"likely: {label}" in lines and verdict.misconceptions == ["heads-merged-without-transpose"]
    assert misconceptions.tags(verdict.misconceptions) == ["misconception:heads-merged-without-transpose"]
    assert misconceptions.label("heads-merged-without-transpose") == label  # the words the student read
    # control: the regex table this replaces mapped any hint with "transpose" in it to another id
    assert misconceptions.label("transposed") != label
    assert misconceptions.label("missing-scaling") == "forgot the 1/sqrt(d_k) scaling"
    assert misconceptions.label("something-nobody-foresaw") == "something nobody foresaw"


def test_a_regrade_lists_who_gained_and_lost_points_on_which_step():
    def result(points):
        return {"tests": [{"name": f"{s} values: t", "score": p} for s, p in points.items()]}

    before = {"ann": {"a.x": 0.0, "a.y": 2.0}, "ben": {"a.x": 1.0, "a.y": 2.0}, "gone": {"a.x": 1.0}}
    after = {"ann": result({"a.x": 3, "a.y": 2}), "ben": result({"a.x": 1, "a.y": 0})}
    assert changes.compare(before, after) == [
        {"submission": "ann", "step": "a.x", "before": 0.0, "after": 3.0, "change": 3.0},
        {"submission": "ben", "step": "a.y", "before": 2.0, "after": 0.0, "change": -2.0}]


def test_the_terminal_grid_is_coloured_or_plain_as_asked():
    exp, mine = causal_weights(n=4), mask_after_softmax(n=4)
    ev = evidence.collect("c.w", case_of(exp), {"output": exp}, {"ok": True, "output": mine}, TOL, True)
    assert terminal_grid.fits(ev)
    big = evidence.collect("c.w", case_of(causal_weights(n=9)), {"output": causal_weights(n=9)},
                           {"ok": True, "output": mask_after_softmax(n=9)}, TOL, True)
    assert not terminal_grid.fits(big)  # 9 x 9: the page draws it, the terminal does not
    coloured, plain = terminal_grid.render(ev, True), terminal_grid.render(ev, False)
    assert "\x1b[" in coloured and "\x1b[" not in plain
    assert f"{float(exp[1, 0]):.3f}" in plain and "*" in plain


def test_a_colour_bar_is_marked_at_round_numbers_that_fit():
    from autograder.pages.drawing import nice_ticks  # noqa: PLC0415 - imported on first use: Pillow's side of the pages

    def words(low, high, room):
        marks, power = nice_ticks(low, high, lambda w: 6 * len(w), room)
        assert all(math.isfinite(v) for v, _ in marks)
        return [w for _, w in marks] + ([f"1e{power}"] if power else [])

    assert words(0.0, 1.0, 400) == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert words(-0.15, 0.15, 150) == ["-0.1", "0.0", "0.1"]  # zero without a sign
    assert words(-0.6, 0.2, 200) == ["-0.6", "-0.4", "-0.2", "0.0", "0.2"]
    assert words(-0.6, 0.2, 120) == ["-0.5", "0.0"]  # fewer where the room is short
    assert words(0.0, 20 * 1.18, 200) == ["0", "5", "10", "15", "20"]
    assert words(0.0, 1.0, 10) == []  # no room: no ticks
    assert words(0.5, 0.5, 400) == ["0.5"]  # every value the same: one tick, the value
    # a mask filled with -1e9 instead of -inf: the numbers in a power of ten, as matplotlib's offset shows them
    assert words(-1e9, 2.0, 400) == ["-1.0", "-0.8", "-0.6", "-0.4", "-0.2", "0.0", "1e9"]
    assert words(-1e308, 1e308, 400)[-1] == "1e308"  # no overflow of the step to inf (a NaN tick, a crash)
    tiny = words(-2e-6, 2e-6, 400)
    assert tiny[0] == "-2.0" and tiny[-2:] == ["2.0", "1e-6"]
    # a narrow bar: the two ends where no round numbers fit, never a lone "0.000"
    assert words(-0.004, 0.004, 99) == ["-0.004", "0.004"]
    # neighbours 12 pixels apart at least, wherever the round numbers fall in the bar (not only in sum)
    marks, _ = nice_ticks(-9.95e-5, 9.95e-5, lambda w: 6 * len(w), 134)
    at = [(v + 9.95e-5) / 1.99e-4 * 134 for v, _ in marks]
    assert all(b - a >= 6 * (len(wa) + len(wb)) / 2 + 12
               for a, b, (_, wa), (_, wb) in zip(at, at[1:], marks, marks[1:]))
    assert words(0.0, 20.0, 400)[:3] == ["0.0", "2.5", "5.0"]
    assert [w for _, w in nice_ticks(0, 20, len, 400, whole=True)[0]] == ["0", "5", "10", "15", "20"]  # counts
    assert nice_ticks(0, 1.18e6, len, 400, whole=True)[1] == 0  # counts never scaled


def test_extreme_answers_are_drawn_with_their_scale_named():
    """A mask filled with -1e9 (or float32's lowest) instead of -inf, and an answer of -1e308 where -inf was
    expected, are drawn, not a crash of the student's grading: the colour bar's numbers in a power of ten."""
    m = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
    scores = torch.randn(1, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for fill in (-1e9, float(torch.finfo(torch.float32).min)):
        img = image(heatmaps.draw({"expected": scores.masked_fill(m, -torch.inf),
                                   "yours": scores.masked_fill(m, fill)}))
        assert img.shape[0] > 100
    expected = torch.tensor([[[0.3, -torch.inf], [0.5, 0.2]]], dtype=torch.float64)
    yours = torch.tensor([[[0.3, -1e308], [0.5, 0.2]]], dtype=torch.float64)
    assert image(heatmaps.draw({"expected": expected, "yours": yours})).shape[0] > 100
