"""``results/summary.html``: the class at a glance, for the instructor.

First the submissions that need a person, by reason (not graded and why, a module not graded, timed out,
limits hit, the worker died, tampering, grader errors, the roster's mismatches; pages/class_list.py); then
per-step pass rates, the score histogram, per step the misconceptions diagnosed (how many students, and
who), the slowest submissions, after a regrade who gained or lost points on which step, and last the table
of every submission (score, status, grading time, submitted, late days; the name links to its feedback
page). Built from summary.json's own figures (``autograde/summary.py``), so the page and the JSON never
disagree; one picture (the histogram), inline; no network.

One small inline script sorts the table when a column header is clicked. Without it the page loses
nothing else: the table reads in name order and the needs-a-person list is plain HTML. (Sorting without
script, by pre-rendered orders shown with CSS ``:target``, would repeat the whole table once per column and
direction: a page many times larger for a real class, and every name many times over for find-in-page
and screen readers.)
"""
from __future__ import annotations

from html import escape
from pathlib import Path

from ..outputs import atomic_file
from . import class_list
from .feedback_page import STYLE, data_uri

EXTRA_STYLE = """
.bar{background:#e0e0e0;width:12em;height:.9em;display:inline-block;vertical-align:middle}
.bar span{background:#2e7d32;height:100%;display:block}
td,th{text-align:left}td.num{text-align:right}td.rate{white-space:nowrap}td.who{max-width:40em}.gain{color:#2e7d32}.loss{color:#c62828}
"""


def histogram(summary: dict) -> bytes:
    """The score distribution as a PNG bar chart (``drawing.py``, Pillow)."""
    from .drawing import Picture, nice_ticks

    buckets = summary["distribution"]
    labels = [f"{b['from_percent']}\u2013{b['to_percent']}" for b in buckets]
    counts = [b["submissions"] for b in buckets]
    picture = Picture(6.4, 2.6, 90)
    width, height = picture.image.size
    x0, x1 = round(0.09 * width), round(0.97 * width)
    y0, y1 = round(0.08 * height), round(0.8 * height)  # the axes, from the top
    n, top = max(len(counts), 1), max(counts + [1]) * 1.18
    pad = 0.05 * (n - 0.2)  # matplotlib's margins around the bars' extent

    def x_of(v):
        return x0 + (v + 0.4 + pad) / (n - 0.2 + 2 * pad) * (x1 - x0)

    def y_of(v):
        return y1 - v / top * (y1 - y0)

    tick = round(3.5 * 90 / 72)
    marks, _ = nice_ticks(0, top, lambda _: 12, y1 - y0, most=8, whole=True)  # numbers stacked: a line each
    for value, _ in marks:
        picture.line([(x0 - tick, y_of(value)), (x0, y_of(value))], 1)
        picture.text((x0 - tick - 2, y_of(value)), str(int(value)), 8, anchor="rm")
    widest = max([picture.text_width(str(int(value)), 8) for value, _ in marks] + [0])
    for i, (count, words) in enumerate(zip(counts, labels)):
        if count:
            picture.pen.rectangle((round(x_of(i - 0.4)), round(y_of(count)), round(x_of(i + 0.4)) - 1, y1),
                                 fill="#3f6fb5")
            picture.text((x_of(i), y_of(count) - 1), str(count), 8, anchor="md")
        picture.line([(x_of(i), y1), (x_of(i), y1 + tick)], 1)
        picture.text((x_of(i), y1 + tick + 2), words, 8, anchor="ma")
    picture.frame((x0, y0, x1, y1 + 1))
    picture.text(((x0 + x1) / 2, height - 4), "score, % of the maximum", 9, anchor="md")
    line = picture.text_height(9)
    picture.upright_text((max(line / 2 + 1, x0 - tick - 2 - widest - 4 - line / 2), (y0 + y1) / 2), "submissions", 9)
    return picture.png()


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    out = [f"<table class=\"{cls}\"><tr>" + "".join(f"<th scope=\"col\">{escape(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(rows_cell for rows_cell in row) + "</tr>" for row in rows]
    out.append("</table>")
    return "\n".join(out)


def _td(text, cls: str = "") -> str:
    return f"<td class=\"{cls}\">{escape(str(text))}</td>" if cls else f"<td>{escape(str(text))}</td>"


def page(summary: dict) -> str:
    n = summary["submissions"]
    out = [f"<h1>Class summary: {n} submission(s)</h1>",
           f"<p>Score out of {summary['max_score']:g}: mean {summary['mean']}, median {summary['median']}, "
           f"min {summary['min']}, max {summary['max']}; {summary['full_marks']} with full marks, {summary['zero']} "
           "with zero.</p>"]
    if summary.get("grader_errors"):
        out.append(f"<p class=\"likely\"><strong>The grader itself failed</strong> while grading "
                   f"{escape(', '.join(summary['grader_errors']))}: see grader_errors.log.</p>")
    if "needs_person" in summary:  # (a summary.json written before there was a list has none)
        out.append("<nav class=\"toc\"><a href=\"#needs-a-person\">Needs a person</a><a href=\"#submissions\">"
                   "Every submission</a><a href=\"#steps\">Steps</a></nav>")
        out.append(class_list.needs_person_html(summary))
    out.append("<h2>Scores</h2>")
    if n:
        out.append(f"<figure><img src=\"{data_uri(histogram(summary))}\" alt=\"histogram of the scores: "
                   + escape(", ".join(f"{b['from_percent']}-{b['to_percent']}%: {b['submissions']}"
                                      for b in summary["distribution"]))
                   + "\"></figure>")
    out.append("<h2 id=\"steps\">Steps</h2>")
    rows = []
    for step, s in summary["steps"].items():
        rate = 100 * s["pass_rate"]
        rows.append([_td(step), _td(s["title"]), _td(f"{s['passed']}/{n}"),
                     f"<td class=\"rate\"><span class=\"bar\" role=\"img\" aria-label=\"{rate:.0f}%\"><span "
                     f"style=\"width:{rate:.0f}%\"></span>"
                     f"</span> {rate:.0f}%</td>"])
    out.append(_table(["step", "title", "passed", "pass rate"], rows))
    out.append("<h2>Misconceptions diagnosed</h2>")
    found = summary.get("misconceptions") or {}
    if found:
        rows = [[_td(step), _td(m["label"]), _td(f"{m['students']} student{'s' if m['students'] != 1 else ''}"),
                 _td(", ".join(m["who"]), "who")] for step, ms in found.items() for m in ms]
        out.append(_table(["step", "likely misconception", "how many", "who"], rows))
    else:
        out.append("<p>None diagnosed.</p>")
    if summary.get("slowest"):
        out.append("<h2>Slowest submissions</h2>")
        out.append(_table(["submission", "seconds"], [[_td(s["submission"]), _td(f"{s['seconds']:.2f}")]
                                                      for s in summary["slowest"]]))
    if summary.get("changes"):
        out.append(f"<h2>Regrade: before and after</h2><p>{summary['regraded']} submission(s) graded again; "
                   "the steps whose points changed:</p>")
        rows = [[_td(c["submission"]), _td(c["step"]), _td(f"{c['before']:g}"), _td(f"{c['after']:g}"),
                 _td(f"{c['change']:+g}", "gain" if c["change"] > 0 else "loss")] for c in summary["changes"]]
        out.append(_table(["submission", "step", "before", "after", "change"], rows, "changes"))
    elif summary.get("regraded"):
        out.append(f"<h2>Regrade: before and after</h2><p>{summary['regraded']} submission(s) graded again: "
                   "no step's points changed.</p>")
    if summary.get("similar_pairs"):
        out.append("<h2>Most similar pairs</h2><p>From <a href=\"similarity.html\">grade similarity</a>: "
                   "a high rank is a reason to look at the two submissions side by side, not a finding.</p>")
        rows = [[_td(p["a"]), _td(p["b"]), _td(f"{p['score']:.2f}"),
                 _td(", ".join(p["steps"]) or "(spread over steps)")]
                for p in summary["similar_pairs"]]
        out.append(_table(["submission", "submission", "similarity", "steps whose code is shared"], rows))
    script = ""
    if "table" in summary:
        out.append(f"<h2>Every submission ({len(summary['table'])})</h2>")
        out.append(class_list.table_html(summary))
        script = f"<script>{class_list.SCRIPT}</script>\n"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Class summary</title>"
            f"<style>{STYLE}{EXTRA_STYLE}{class_list.STYLE}</style></head>\n<body>\n" + "\n".join(out)
            + f"\n{script}</body></html>\n")


def write(path: Path, summary: dict) -> Path:
    return atomic_file.write_text(path, page(summary))
