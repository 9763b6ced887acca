"""DIR/similarity.html: one self-contained page (no script, no network), pairs ranked overall and per step,
the shared fragments highlighted side by side, and, first of all, the statement that it gives no verdict."""
from __future__ import annotations

import html
from pathlib import Path

from ..outputs import atomic_file
from .rank import Comparison, Pair
from .extract import StepCode, Submission
from .fingerprint import K, slices

NO_VERDICT = ("This report ranks pairs of submissions by how much code they share beyond what everyone may share "
              "(the released stubs, the docstrings, the reference solutions, the book's chapter 3 code, and what "
              "many students in this class wrote alike). It never gives a verdict. A high rank is a reason to look "
              "at the two submissions side by side, not a finding: short solutions to the same exercise can look "
              "alike by chance, and students may have worked together as allowed. Read the code, then decide.")

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:110em;color:#222}
.verdict{border:2px solid #b45309;background:#fff7ed;padding:1em;font-size:1.05em}
table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f4f6}.num{text-align:right;font-variant-numeric:tabular-nums}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1em}
pre{background:#f8f8f8;border:1px solid #ddd;padding:.6em;overflow-x:auto;font-size:.85em;line-height:1.35}
mark{background:#fde68a}.muted{color:#666}details{margin:.6em 0}summary{cursor:pointer;font-weight:600}
"""


def _e(text) -> str:
    return html.escape(str(text))


def _code_html(code: StepCode, token_slices: list[tuple[int, int]]) -> str:
    marks: list[list[int]] = []  # per line: from a shared token to the last shared one after it on that line
    for lo, hi in token_slices:
        for tok in code.tokens[lo:hi]:
            gap = code.source[marks[-1][1]:tok.start] if marks else "\n"
            if marks and tok.start >= marks[-1][1] and not gap.strip() and "\n" not in gap:
                marks[-1][1] = tok.end
            else:
                marks.append([tok.start, tok.end])
    marks.sort()
    parts = []
    for lo, hi in sorted(code.spans):
        out, pos = [], lo
        for m_lo, m_hi in marks:
            m_lo, m_hi = max(m_lo, lo), min(m_hi, hi)
            if m_hi <= m_lo or m_hi <= pos:
                continue
            m_lo = max(m_lo, pos)
            out.append(_e(code.source[pos:m_lo]) + "<mark>" + _e(code.source[m_lo:m_hi]) + "</mark>")
            pos = m_hi
        out.append(_e(code.source[pos:hi]))
        parts.append("".join(out))
    return "\n\n".join(parts)


def _side_by_side(pair: Pair, step: str, comparison: Comparison) -> str:
    match = pair.steps[step]
    cells = []
    for sub in (pair.a, pair.b):
        code = sub.steps[step]
        prints = comparison.prints[sub.key].all[step]
        idx = [i for h in match.hashes for i in prints.get(h, [])]
        cells.append(f"<div><div class='muted'>{_e(_label(sub))}: {_e(code.module)}</div>"
                     f"<pre>{_code_html(code, slices(idx, K))}</pre></div>")
    return (f"<h4>{_e(step)}: step score {match.score:.2f} ({match.shared} shared fingerprints; "
            f"{match.evidence[0]} and {match.evidence[1]} beyond boilerplate)</h4><div "
            f"class='side'>{''.join(cells)}</div>")


def _label(sub: Submission) -> str:
    return sub.name if sub.term == "current" else f"{sub.name} (previous term)"


def _pair_row(rank: int, pair: Pair) -> str:
    steps = ", ".join(pair.shared_steps) or "<span class='muted'>none above 0.5</span>"
    return (f"<tr><td class='num'>{rank}</td><td><a href='#pair-{rank}'>{_e(_label(pair.a))}</a></td>"
            f"<td>{_e(_label(pair.b))}</td><td class='num'>{pair.score:.2f}</td><td class='num'>{pair.overall:.2f}</td>"
            f"<td>{steps}</td></tr>")


def render(comparison: Comparison, subs: list[Submission], course, used: list[str], problems: list[str], *,
           top: int = 50, seconds: float | None = None) -> str:
    pairs = comparison.pairs
    shown = pairs[:top]
    current = [s for s in subs if s.term == "current"]
    previous = [s for s in subs if s.term != "current"]
    h = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Similarity: {_e(course.unit)}</title>"
         f"<style>{CSS}</style></head><body>",
         f"<h1>Similarity of submissions: {_e(course.title)}</h1>",
         f"<p class='verdict' id='no-verdict'><strong>No verdict.</strong> {_e(NO_VERDICT)}</p>",
         "<h2>What was compared</h2><ul>",
         f"<li>{len(current)} submissions" + (f", and {len(previous)} of the previous term (compared with this "
                                               "term's only)" if previous else "") + "</li>",
         f"<li>{comparison.compared} pairs; {comparison.candidates} shared at least one fingerprint and were scored; "
         "the others share nothing beyond boilerplate (score 0)</li>",
         f"<li>excluded as boilerplate: {_e('; '.join(used))}; and fragments written alike by more than "
         f"{comparison.common_cap} submissions in the same step</li>",
         "<li>code is read and parsed, never run; names, comments, docstrings, formatting and the order of "
         "functions and methods do not count</li>"]
    if seconds is not None:
        h.append(f"<li>{seconds:.1f} s</li>")
    h.append("</ul>")
    notes = [(s, n) for s in subs for n in s.notes]
    if problems or notes:
        h.append("<h2>Notes</h2><ul>")
        h += [f"<li>{_e(p)}</li>" for p in problems]
        h += [f"<li><strong>{_e(_label(s))}</strong>: {_e(n)}</li>" for s, n in notes]
        h.append("</ul>")
    h.append(f"<h2 id='overall'>Pairs, most similar first (top {len(shown)} of {len(pairs)} with anything shared)</h2>")
    if shown:
        h.append("<table><tr><th>rank</th><th>a</th><th>b</th><th>score</th><th>overall</th><th>steps shared</th></tr>")
        h += [_pair_row(i, p) for i, p in enumerate(shown, start=1)]
        h.append("</table>")
        h.append("<p class='muted'>score: the larger of the overall score (all steps) and the most shared step's "
                 "score, 0 to 1; see docs/similarity.md.</p>")
    else:
        h.append("<p>No two submissions share code beyond the boilerplate.</p>")
    h.append("<h2 id='per-step'>Per step</h2>")
    for step in course.steps:
        ranked = sorted((p for p in pairs if step in p.steps), key=lambda p: -p.steps[step].score)[:5]
        if not ranked:
            continue
        h.append(f"<details><summary>{_e(step)}: top {len(ranked)}</summary><table>"
                 "<tr><th>a</th><th>b</th><th>step score</th><th>shared</th></tr>")
        for p in ranked:
            m = p.steps[step]
            h.append(f"<tr><td>{_e(_label(p.a))}</td><td>{_e(_label(p.b))}</td><td class='num'>{m.score:.2f}</td>"
                     f"<td class='num'>{m.shared}</td></tr>")
        h.append("</table></details>")
    h.append("<h2>Side by side</h2>")
    for rank, pair in enumerate(shown, start=1):
        h.append(f"<section id='pair-{rank}'><h3>{rank}. {_e(_label(pair.a))} and {_e(_label(pair.b))}: "
                 f"score {pair.score:.2f}</h3>")
        for step in sorted(pair.steps, key=lambda s: -pair.steps[s].score):
            h.append(_side_by_side(pair, step, comparison))
        h.append("</section>")
    h.append("</body></html>\n")
    return "\n".join(h)


def write(path: Path, comparison: Comparison, subs: list[Submission], course, used: list[str], problems: list[str],
          **kwargs) -> None:
    atomic_file.write_text(path, render(comparison, subs, course, used, problems, **kwargs))
