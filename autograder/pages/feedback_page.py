"""The feedback page of one submission: self-contained HTML (inline PNG, no script, no network).

One card per step (points, status, the likely misconception); for a failing public case its pictures
(heatmaps.draw) and a table of its largest mismatches; for a hidden case only its shape, dtype and how
many entries differ. ``grade autograde`` writes it as ``results/<name>/feedback.html``, ``grade check
--html`` for a student; Gradescope shows the same body (``gradescope_html``).
"""
from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from ..outputs import atomic_file
from . import heatmaps, mismatches
from .cards import PASSED, CountOutcome, StepOutcome, points_words
from .heatmaps import rows_are_weights

#: the pictures of one page stay under this many bytes (results.json under 1 MB with its base64)
PICTURE_BUDGET = 600_000

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:70em;color:#1b1b1b;
background:#fafafa;line-height:1.4}
h1{font-size:1.5em;margin-bottom:.2em}
.cards{display:flex;flex-wrap:wrap;gap:.6em;align-items:stretch}
.card{background:#fff;border:1px solid #ddd;border-left:6px solid #999;border-radius:4px;padding:.4em .9em;
flex:1 1 100%;box-sizing:border-box;min-width:0}
.card.passed{flex:0 1 21em}.card h2{overflow-wrap:normal;word-break:normal;hyphens:manual}
.card.passed h2{font-size:.95em}.card.passed p{margin:.2em 0}
.failed-list{background:#fff;border:1px solid #ddd;border-left:6px solid #c62828;border-radius:4px;padding:.4em .9em;
margin:.6em 0}.failed-list h2{font-size:1.1em;margin:.2em 0}.failed-list ul{margin:.2em 0;padding-left:1.2em}
.failed-list.none{border-left-color:#2e7d32}
details.passed-steps{margin:.8em 0}details.passed-steps>summary{cursor:pointer;font-weight:bold;padding:.3em 0}
.card.passed{border-left-color:#2e7d32}.card.failed{border-left-color:#c62828}
.card.not-attempted,.card.blocked{border-left-color:#f9a825}
.card h2{font-size:1.1em;margin:.2em 0}.status{font-weight:bold}
.passed .status,.status.passed{color:#2e7d32}.failed .status,.status.failed{color:#c62828}
.not-attempted .status,.blocked .status,.status.not-attempted{color:#8d6e00}
.card .status.passed{color:#2e7d32}.card .status.failed{color:#c62828}.card .status.not-attempted{color:#8d6e00}
.likely{background:#fff3e0;padding:.3em .6em;border-radius:3px}
pre{background:#f4f4f4;padding:.5em;overflow-x:auto;font-size:.85em;white-space:pre-wrap}
table{border-collapse:collapse;margin:.4em 0}
td,th{border:1px solid #ccc;padding:.15em .5em;font-size:.9em;text-align:right}
th{background:#eee}td:first-child,th:first-child{text-align:left}
figure{margin:.5em 0}img{max-width:100%;height:auto}
"""


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _status_class(status: str) -> str:
    return status.replace(" ", "-")


def _hidden_facts(ev: dict) -> str:
    share = 100 * ev["differ"] / ev["total"] if ev["total"] else 0
    return (f"<p>Hidden case: {escape(ev['what'])} of shape [{', '.join(map(str, ev['shape']))}], "
            f"{escape(ev['dtype'])}; {ev['differ']} of {ev['total']} entries ({share:.0f}%) differ. Its values stay "
            "hidden.</p>")


def _mismatch_table(ev: dict) -> str:
    rows = mismatches.largest(ev)
    if not rows:
        return ""
    out = ["<table class=\"mismatches\"><caption>Largest mismatches"
           + (" (first of the batch)" if len(ev["shape"]) >= 3 and ev["shape"][0] > 1 else "") + "</caption>",
           "<tr><th scope=\"col\">index</th><th scope=\"col\">expected</th><th scope=\"col\">yours</th>"
           "<th scope=\"col\">yours − expected</th></tr>"]
    for row in rows:
        out.append(f"<tr><td>[{', '.join(map(str, row['index']))}]</td><td>{row['expected']}</td>"
                   f"<td>{row['yours']}</td><td>{row['difference']}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def caption(ev: dict, weights: bool) -> str:
    """The words under a case's pictures, in whole sentences."""
    what = ev["what"]
    heads = ev.get("heads") or 0
    # the kit's words start a sentence; a name of the student's (sa_v1.W_key) stays
    if "." not in what.split(" ", 1)[0]:
        what = what[:1].upper() + what[1:]
    words = [f"{what} of case {ev.get('case', '')!r}.",
             "From left to right: the expected values, yours on the same colour scale, and yours − expected "
             "(red where yours is too high, blue where it is too low)."]
    if heads > 1:
        words.append(f"One row of panels per head ({min(heads, len(ev['expected']))} shown).")
    if weights:
        words.append("On the right, each row's sum, expected and yours: attention weights sum to 1.")
    return " ".join(words)


def _count(card: StepOutcome, c: CountOutcome, pictures: dict) -> str:
    kind = "public" if c.public else "hidden"
    head = (f"<h3>{escape(c.count)} <small>({kind})</small>: <span class=\"status {_status_class(c.status)}\">"
            f"{escape(c.status)}</span> "
            f"{c.points:g}/{c.max_points:g}</h3>")
    if c.status == PASSED:
        return head
    parts = [head, f"<pre>{escape(c.feedback)}</pre>"]
    ev = c.evidence
    if ev and ev.get("public") and "expected" in ev:
        png = pictures.get((card.step, c.count))
        what = escape(ev["what"])
        if isinstance(png, tuple):  # the same case as an earlier count of this step: drawn once
            parts.append(f"<p>The same case as [{escape(png[1])}] above: see its pictures and mismatches.</p>")
            return "\n".join(parts)
        if png:
            weights = rows_are_weights(ev["expected"])
            sums_alt = ", with the row sums" if weights else ""
            parts.append(f"<figure><img data-test=\"{escape(c.number)}\" src=\"{data_uri(png)}\" "
                         f"alt=\"{what} of case {escape(ev.get('case', ''))}: expected, yours and their difference as "
                         f"heatmaps{sums_alt}\"><figcaption>{escape(caption(ev, weights))}</figcaption></figure>")
        elif pictures.get("__cut__"):
            parts.append("<p>(picture left out to keep this page small)</p>")
        parts.append(_mismatch_table(ev))
    elif ev and not ev.get("public"):
        parts.append(_hidden_facts(ev))
    return "\n".join(p for p in parts if p)


def _card(card: StepOutcome, pictures: dict) -> str:
    status = card.status
    lines = [f"<section class=\"card {_status_class(status)}\" id=\"{escape(card.step)}\">",
             f"<h2>{breakable(card.step)}: {breakable(card.title, dots=False)}</h2>",
             f"<p><span class=\"status\">{escape(status)}</span>, {escape(points_words(card))}</p>"]
    if card.blocked_by:
        lines.append(f"<p>It builds on {escape(card.blocked_by)}, which fails its own checks: fix that first.</p>")
    for hint in card.likely:
        lines.append(f"<p class=\"likely\">likely: {escape(hint)}</p>")
    if status != PASSED:
        lines += [_count(card, c, pictures) for c in card.counts]
    if card.printed:
        lines.append(f"<p>Your code printed while {escape(card.step)} was "
                     f"checked:</p><pre>{escape(card.printed)}</pre>")
    lines.append("</section>")
    return "\n".join(line for line in lines if line)


def draw_pictures(cards: list[StepOutcome], budget: int = PICTURE_BUDGET) -> dict:
    """(step, count) -> PNG for each failing public case with arrays; ``"__cut__"`` when the budget ran out.

    A picture that cannot be drawn is left out rather than fail the student's grading (the tests of
    ``heatmaps`` draw directly, so a fault there still fails them)."""
    pictures: dict = {}
    used = 0
    drawn: dict = {}  # (step, case, what) -> the count whose picture shows it
    for card in cards:
        for c in card.counts:
            ev = c.evidence
            if c.status == PASSED or not ev or not ev.get("public") or "expected" not in ev:
                continue
            key = (card.step, ev.get("case"), ev["what"])
            if key in drawn:
                pictures[(card.step, c.count)] = ("same", drawn[key])
                continue
            if used >= budget:
                pictures["__cut__"] = True
                continue

            try:
                png = heatmaps.draw(ev)
            except Exception:  # noqa: BLE001 - a picture is an extra: its table of mismatches says the same in words
                continue
            used += len(png)
            pictures[(card.step, c.count)] = png
            drawn[key] = c.count
    return pictures


def breakable(name: str, dots: bool = True) -> str:
    """``name`` escaped, with a break opportunity (``<wbr>``) after each underscore and (``dots``) each dot: a
    long identifier wraps between its parts, never inside a word. A title is prose ("Exercise 3.1"): its dots
    stay whole."""
    out = escape(name).replace("_", "_<wbr>")
    return out.replace(".", ".<wbr>") if dots else out


def _failed_list(cards: list[StepOutcome]) -> str:
    """The steps that did not pass, first on the page, each a link to its card."""
    todo = [card for card in cards if card.status != PASSED]
    if not todo:
        return ("<nav class=\"failed-list none\" aria-label=\"What failed\"><h2>What failed</h2>"
                "<p>Nothing: every step passed.</p></nav>")
    items = [f"<li><a href=\"#{escape(card.step)}\">{breakable(card.step)}</a>: {escape(card.title)} "
             f"(<span class=\"status {_status_class(card.status)}\">{escape(card.status)}</span>, "
             f"{card.points:g}/{card.max_points:g} points)</li>" for card in todo]
    return (f"<nav class=\"failed-list\" aria-label=\"What failed\"><h2>What failed: {len(todo)} of {len(cards)} "
            f"step(s)</h2>\n<ul>\n" + "\n".join(items) + "\n</ul></nav>")


def body(cards: list[StepOutcome], pictures: dict, heading: str, lines: list[str], public_only: bool = False) -> str:
    """The page's content: a heading, the total, the list of what failed (links to its cards), the summary
    lines, the cards of the steps that did not pass, then the passed steps folded (``<details>``).
    ``public_only``: the cards hold only the public counts (Gradescope's always-visible output), and the
    total says so."""
    score = sum(c.points for c in cards)
    top = sum(c.max_points for c in cards)
    what = "points on the public counts (hidden counts are listed with the tests)" if public_only else "points"
    out = [f"<h1>{escape(heading)}</h1>", f"<p><strong>{score:g} / {top:g} {what}</strong></p>", _failed_list(cards)]
    if lines:
        out.append("<pre class=\"summary\">" + escape("\n".join(lines)) + "</pre>")
    todo = [card for card in cards if card.status != PASSED]
    passed = [card for card in cards if card.status == PASSED]
    if todo:
        out.append("<div class=\"cards\">")
        out += [_card(card, pictures) for card in todo]
        out.append("</div>")
    if passed:
        out.append(f"<details class=\"passed-steps\"><summary>{len(passed)} step(s) passed: show them</summary>"
                   "<div class=\"cards\">")
        out += [_card(card, pictures) for card in passed]
        out.append("</div></details>")
    return "\n".join(out)


def page(cards: list[StepOutcome], pictures: dict, heading: str, lines: list[str] = ()) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(heading)}</title><style>{STYLE}</style></head>\n<body>\n"
            + body(cards, pictures, heading, list(lines)) + "\n</body></html>\n")


def write(path: Path, cards: list[StepOutcome], pictures: dict, heading: str, lines: list[str] = ()) -> Path:
    return atomic_file.write_text(path, page(cards, pictures, heading, lines))
