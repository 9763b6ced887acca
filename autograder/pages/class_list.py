"""The class list: every submission (score, status, grading time, when it was handed in, late days, its
feedback page), and first the submissions that need a person, with why.

Built from what results.json says as data, never from its words: ``extra_data.problems`` (not graded and
why, a module not graded and why, timed out, a limit hit and which, the worker died, a broken protocol, the
grader's own failures; grading/suites/problems.py, each set by the trusted side from what it saw: no student's words),
``extra_data.grader_errors`` and grader_errors.log,
``extra_data.submitted_at`` with course.yml's ``late_policy`` (export/late_policy.py, as ``grade export``
applies it), a results.json that cannot be read, and, when ``grade autograde --roster`` gave one, the
roster (export/roster.py: who is not on it, who matches several students, who handed nothing in).
"""
from __future__ import annotations

from datetime import datetime
from html import escape
from urllib.parse import quote

from autograder.intake.not_graded_words import MODULE, NOT_GRADED

#: the needs-a-person categories, in the order the list shows them
CATEGORIES = {
    "not_graded": "Not graded",
    "module_not_graded": "A module not graded",
    "timed_out": "Timed out",
    "cell_failed": "A notebook cell raised, and steps use it",
    "limit": "Limits hit",
    "crashed": "Worker died",
    "protocol": "Answers not taken (messages of its own on the grader's channel)",
    "grader_error": "Grader errors",
    "beside": "Handed in beside the code, not graded (for a person to read)",
    "unreadable_results": "results.json unreadable",
    "not_on_roster": "Not on the roster",
    "ambiguous": "Matches several roster students",
    "no_submission": "On the roster, no submission",
}
#: the short word of each category, for the table's status column and the terminal
SHORT = {
    "not_graded": "not graded", "module_not_graded": "module not graded", "timed_out": "timed out",
    "cell_failed": "cell raised",
    "limit": "limit hit", "crashed": "worker died", "protocol": "answers not taken", "grader_error": "grader error",
    "unreadable_results": "results unreadable", "not_on_roster": "not on roster", "ambiguous": "ambiguous",
    "no_submission": "no submission", "beside": "a file beside it",
}
#: the list of hand-ins a person has decided (decision.json: outputs/decision.py), apart from those still to look at
DECIDED = "Decided by a person"
LIMITS = {"time": "step time limit", "submission time": "submission's total time limit",
          "import": "a module's own code over a step's time limit", "memory": "memory",
          "output": "output size", "processes": "process count"}


def _steps(steps: list[str], n: int = 3) -> str:
    shown = ", ".join(steps[:n])
    return shown + (f" and {len(steps) - n} more" if len(steps) > n else "")


def reason(problem: dict) -> dict:
    """One problem of results.json as the list shows it: its category, a short ``why`` and the detail."""
    kind, steps = problem.get("kind"), list(problem.get("steps") or [])
    detail = str(problem.get("message") or "")
    if kind == "not_graded":
        why = NOT_GRADED.get(problem.get("cause"), str(problem.get("cause") or "unknown"))
    elif kind == "module_not_graded":
        why = f"{problem.get('module')}: {MODULE.get(problem.get('cause'), problem.get('cause'))}"
        if problem.get("near_miss"):
            why += f" ({problem['near_miss']} is there: rename it)"
        detail = f"{detail} ({len(steps)} step(s) score zero)" if steps else detail
    elif kind == "beside":
        why = ", ".join(str(f) for f in problem.get("files") or [])
    elif kind == "timed_out":
        limit = problem.get("limit") or "time"
        why = f"{LIMITS.get(limit, limit)}, " + (f"from {steps[0]} on ({len(steps)} step(s))"
                                                 if limit == "submission time" else _steps(steps))
    elif kind == "limit":
        limit = problem.get("limit") or "a limit"
        why = f"{LIMITS.get(limit, limit)}, {_steps(steps)}"
    elif kind in ("crashed", "protocol"):
        why = _steps(steps)
    elif kind == "cell_failed":
        why = f"{problem.get('cell') or problem.get('module')}: {_steps(steps)}"
    elif kind == "grader_error":
        why = _steps(steps) if steps else "see grader_errors.log"
        detail = detail or "tracebacks in grader_errors.log"
    else:
        why = str(problem.get("cause") or kind)
    entry = {"category": kind if kind in CATEGORIES else "crashed", "why": why, "detail": detail}
    for key in ("cause", "limit", "module", "near_miss"):
        if problem.get(key):
            entry[key] = problem[key]
    if steps:
        entry["steps"] = steps
    return entry


def merged(problems: list[dict]) -> list[dict]:
    """A hand-in's problems, each said once: modules not graded for the same cause in the same words (one broken
    notebook that was to give several modules) become one problem naming them all, their steps counted once."""
    out: list[dict] = []
    for problem in problems:
        same = next((p for p in out if problem.get("kind") == "module_not_graded" == p.get("kind")
                     and problem.get("cause") == p.get("cause") != "missing"
                     and problem.get("message") == p.get("message")), None)
        if same is None:
            out.append(dict(problem))
            continue
        same["module"] = f"{same.get('module')}, {problem.get('module')}"
        same["steps"] = list(dict.fromkeys([*(same.get("steps") or []), *(problem.get("steps") or [])]))
    return out


def lateness(policy, submitted_at: str | None) -> dict:
    """``{"late": on_time|in_grace|late|undated|submitted, "late_days": days or None}`` (as grade export counts)."""
    from autograder.export.late_policy import LATE, ON_TIME, IN_GRACE, assess

    when = datetime.fromisoformat(submitted_at.replace("Z", "+00:00")) if submitted_at else None
    late = assess(policy, when)
    days = late.late_days if late.status == LATE else 0.0 if late.status in (ON_TIME, IN_GRACE) else None
    return {"late": late.status, "late_days": days, "late_penalty": round(100 * late.penalty, 2)}


def build(course, results: dict[str, dict], grader_errors=(), unreadable: dict[str, str] | None = None,
          pages: set[str] | None = None, roster=None, decisions: dict | None = None) -> tuple[list[dict], list[dict]]:
    """(every submission's row, the needs-a-person entries, most urgent category first).

    ``unreadable``: submission -> why its results.json cannot be read; ``pages``: the submissions with a
    feedback.html (None: all); ``roster``: the roster's students (export/roster.py), or None when unknown;
    ``decisions``: submission -> what a person recorded (outputs/decision.py): such an entry carries its
    ``decision`` in words (the summary lists it apart, as decided), and a decision alone (no hand-in) is a row too.
    """
    decisions = decisions or {}
    top = course.max_points()
    logged = set(grader_errors)
    index = None
    if roster is not None:
        from autograder.export.roster import RosterIndex

        index = RosterIndex(roster)
    rows, reasons = [], {}
    for name in sorted({*results, *(unreadable or {}), *decisions}, key=str.lower):
        result = results.get(name)
        found = []
        if result is None and name in (unreadable or {}):
            found.append({"category": "unreadable_results", "why": "cannot be read",
                          "detail": (unreadable or {})[name]})
        else:
            extra = result.get("extra_data") or {}
            found += [reason(p) for p in merged(extra.get("problems") or [])]
            if ((name in logged or extra.get("grader_errors"))
                    and not any(r["category"] == "grader_error" for r in found)):
                found.append(reason({"kind": "grader_error"}))
        matches = index.lookup(name) if index is not None else None
        if matches is not None and not matches:
            found.append({"category": "not_on_roster", "why": "",
                          "detail": "no roster student has this login, id or e-mail"})
        elif matches is not None and len(matches) > 1:
            found.append({"category": "ambiguous", "why": ", ".join(s.label for s in matches), "detail": ""})
        order = list(CATEGORIES)
        found.sort(key=lambda r: order.index(r["category"]))
        extra = (result or {}).get("extra_data") or {}
        decided = decisions.get(name)
        status = ", ".join(dict.fromkeys(SHORT[r["category"]] for r in found)) or "graded"
        if decided is not None:
            status = "decided by a person" + ("" if result is not None or name in (unreadable or {})
                                              else " (no hand-in)")
        row = {"submission": name,
               "student": matches[0].label if matches and len(matches) == 1 else None,
               "score": result.get("score") if result else None, "max_score": top,
               "status": status,
               "status_rank": order.index(found[0]["category"]) if found else len(order),
               "execution_time": result.get("execution_time") if result else None,
               "submitted_at": extra.get("submitted_at"),
               **lateness(course.late_policy, extra.get("submitted_at")),
               "feedback": f"{quote(name)}/feedback.html" if result is not None and (pages is None or name in pages)
               else None}
        if decided is not None:
            row["decision"] = decided.words(top)
            changed = decided.submission_hash and extra.get("submission_hash") and \
                decided.submission_hash != extra.get("submission_hash")
            if changed:
                row["decision"] += "; recorded for an earlier hand-in: check that it still holds"
        rows.append(row)
        if found or decided is not None:
            reasons[name] = found
    needs = []
    for name, found in reasons.items():
        row = next(r for r in rows if r["submission"] == name)
        entry = {"submission": name, "feedback": row["feedback"], "reasons": found}
        if row.get("decision"):
            entry["decision"] = row["decision"]
        needs.append(entry)
    if roster is not None:
        handed = {id(s) for name in {*results, *(unreadable or {}), *decisions} for s in index.lookup(name)}
        needs += [{"submission": None, "student": s.label, "feedback": None,
                   "reasons": [{"category": "no_submission", "why": "",
                                "detail": "nothing handed in under this student's login, id or e-mail"}]}
                  for s in roster if id(s) not in handed]
    order = list(CATEGORIES)
    needs.sort(key=lambda e: (order.index(e["reasons"][0]["category"]) if e["reasons"] else len(order),
                              (e["submission"] or e["student"]).lower()))
    return rows, needs


def by_category(needs: list[dict]) -> dict[str, list[tuple[dict, list[dict]]]]:
    """The needs-a-person entries, each once, under the category of its most urgent reason, in CATEGORIES' order:
    (entry, all its reasons)."""
    grouped: dict[str, list[tuple[dict, list[dict]]]] = {}
    for category in CATEGORIES:
        for entry in needs:
            if entry["reasons"] and entry["reasons"][0]["category"] == category:
                grouped.setdefault(category, []).append((entry, entry["reasons"]))
    return grouped


def who(entry: dict) -> str:
    return entry["submission"] or entry["student"]


def one_line(entry: dict) -> str:
    """``frank: not graded (corrupt zip); timed out (...)``: for the terminal and summary.md; a decided entry says
    the decision first (``frank: decided: 70/81 recorded by a person (...); was: not graded (corrupt zip)``)."""
    said = "; ".join(SHORT[r["category"]] + (f" ({r['why']})" if r["why"] else "") for r in entry["reasons"])
    if entry.get("decision"):
        return f"{who(entry)}: decided: {entry['decision']}" + (f"; was: {said}" if said else "")
    return f"{who(entry)}: {said}"


def has_late_policy(rows: list[dict]) -> bool:
    """Whether course.yml has a late_policy (else every row is ``submitted``: no late column)."""
    return any(r.get("late") not in (None, "submitted") for r in rows)


def late_text(row: dict) -> str:
    late = row.get("late")
    if late == "late":
        days = row["late_days"]
        return f"{days:g} day{'s' if days != 1 else ''} late (-{row['late_penalty']:g}%)"
    return {"on_time": "on time", "in_grace": "in grace period", "undated": "no time known"}.get(late, "")


# -- on the dashboard (autograder/pages/dashboard.py) --------------------------------------------------
STYLE = """
nav.toc a{margin-right:1em}
#needs-a-person{background:#fff;border:1px solid #ddd;border-left:6px solid #c62828;border-radius:4px;
  padding:.2em 1em .6em}
#needs-a-person.none{border-left-color:#2e7d32}
#needs-a-person h3{font-size:1em;margin:.7em 0 .2em}#needs-a-person ul{margin:.2em 0;padding-left:1.4em}
#needs-a-person .why{font-weight:bold}#needs-a-person .detail{color:#555}
table.sortable th button{font:inherit;font-weight:bold;background:none;border:0;padding:0;cursor:pointer;color:inherit}
table.sortable th button:hover,table.sortable th button:focus-visible{text-decoration:underline}
table.sortable th button::after{content:" \\2195";color:#999}
table.sortable th[aria-sort=ascending] button::after{content:" \\25B2";color:inherit}
table.sortable th[aria-sort=descending] button::after{content:" \\25BC";color:inherit}
table.sortable td.state{text-align:left}table.sortable td.state.problem{color:#c62828;font-weight:bold}
table.sortable td,table.sortable th{white-space:nowrap}
table.sortable caption{text-align:left;font-size:.85em;color:#555;caption-side:top;padding:.2em 0}
"""

#: Click a column header to sort (again: the other way). One copy of the table, in name order without script;
#: empty cells stay last either way, ties keep name order. No network, no library.
SCRIPT = """
(() => {
  for (const table of document.querySelectorAll("table.sortable")) {
    const body = table.tBodies[0], heads = Array.from(table.tHead.rows[0].cells);
    const hint = table.querySelector("caption .how");
    if (hint) hint.textContent = "Click a column header to sort by it; click again to reverse.";
    const original = Array.from(body.rows);
    heads.forEach((th, col) => {
      const label = th.textContent, button = document.createElement("button");
      button.type = "button";
      button.textContent = th.textContent;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", () => {
        const up = th.getAttribute("aria-sort") !== "ascending";
        heads.forEach(h => h.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        if (hint) hint.textContent = `Sorted by ${label}, ${up ? "ascending" : "descending"}; ` +
            "click a header to sort by it.";
        const number = th.dataset.type === "number";
        const key = row => {
          const cell = row.cells[col], raw = cell.dataset.sort ?? cell.textContent.trim();
          return raw === "" ? null : number ? Number(raw) : raw.toLowerCase();
        };
        const rows = original.slice().sort((a, b) => {
          const x = key(a), y = key(b);
          if (x === null || y === null) return (x === null) - (y === null);
          const c = number ? x - y : x.localeCompare(y);
          return up ? c : -c;
        });
        body.append(...rows);
      });
    });
  }
})();
"""


def _cell(text, sort=None, cls: str = "") -> str:
    attrs = (f" class=\"{cls}\"" if cls else "") + ("" if sort is None else f" data-sort=\"{escape(str(sort))}\"")
    return f"<td{attrs}>{escape(str(text))}</td>"


def _link(name: str, href: str | None) -> str:
    return f"<a href=\"{escape(href)}\">{escape(name)}</a>" if href else escape(name)


def _reason_html(why: dict) -> str:
    short = f"<span class=\"why\">{escape(why['why'])}</span>" if why["why"] else ""
    if not why["detail"]:
        return short
    return f"{short} &mdash; <span class=\"detail\">{escape(why['detail'])}</span>" if short else \
        f"<span class=\"detail\">{escape(why['detail'])}</span>"


def needs_person_html(summary: dict) -> str:
    needs = summary.get("needs_person") or []
    decided = summary.get("decided") or []
    if not needs:
        roster = " Every roster student handed one in." if summary.get("roster") is not None else ""
        out = [f"<section id=\"needs-a-person\" class=\"none\"><h2>Needs a person: none</h2><p>Every submission was "
               f"graded in full, within its limits{', or decided by a person' if decided else ''}.{roster}</p>"]
    else:
        out = [f"<section id=\"needs-a-person\"><h2>Needs a person: {len(needs)}</h2>"]
        for category, found in by_category(needs).items():
            out.append(f"<h3>{escape(CATEGORIES[category])} ({len(found)})</h3><ul class=\"{category}\">")
            for entry, reasons in found:
                said = "; ".join(_reason_html(why) for why in reasons)
                out.append(f"<li data-submission=\"{escape(who(entry))}\">{_link(who(entry), entry.get('feedback'))}: "
                           f"{said}</li>")
            out.append("</ul>")
    if decided:
        out.append(f"<h3>{escape(DECIDED)} ({len(decided)})</h3><ul class=\"decided\">")
        for entry in decided:
            was = "; ".join(_reason_html(why) for why in entry["reasons"])
            out.append(f"<li data-submission=\"{escape(who(entry))}\">{_link(who(entry), entry.get('feedback'))}: "
                       f"<span class=\"why\">{escape(entry['decision'])}</span>" + (f" (the kit: {was})" if was else "")
                       + "</li>")
        out.append("</ul>")
    out.append("</section>")
    return "\n".join(out)


def _utc_seconds(when: str | None) -> float | None:
    if not when:
        return None
    try:
        return datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _when(when: str | None) -> str:
    """``2026-12-11 20:00 +01:00``: the platform's time, minutes shown, its own UTC offset kept."""
    if not when:
        return ""
    try:
        moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        return when
    offset = moment.strftime("%z")
    return moment.strftime("%Y-%m-%d %H:%M") + (f" {offset[:3]}:{offset[3:]}" if offset else "")


def table_html(summary: dict) -> str:
    rows = summary.get("table") or []
    roster = summary.get("roster") is not None
    late = has_late_policy(rows)
    heads = [("submission", "text"), *([("student", "text")] if roster else []), ("score", "number"),
             ("status", "number"), ("grading time (s)", "number"), ("submitted", "number"),
             *([("late days", "number")] if late else [])]
    out = ["<table id=\"submissions\" class=\"sortable\"><caption>One row per submission; the name links to its "
           "feedback page. <span class=\"how\">In name order.</span></caption>",
           "<thead><tr>"
           + "".join(f"<th scope=\"col\" data-type=\"{kind}\">{escape(head)}</th>" for head, kind in heads)
           + "</tr></thead><tbody>"]
    for r in rows:
        score = "" if r["score"] is None else f"{r['score']:g}/{r['max_score']:g}"
        cells = [f"<td data-sort=\"{escape(r['submission'])}\">{_link(r['submission'], r.get('feedback'))}</td>"]
        if roster:
            cells.append(_cell(r.get("student") or ""))
        cells += [_cell(score, "" if r["score"] is None else r["score"], "num"),
                  _cell(r["status"], r["status_rank"], "state" + (" problem" if r["status"] != "graded" else "")),
                  _cell("" if r.get("execution_time") is None else f"{r['execution_time']:.2f}",
                        "" if r.get("execution_time") is None else r["execution_time"], "num"),
                  _cell(_when(r.get("submitted_at")), "" if _utc_seconds(r.get("submitted_at")) is None
                        else _utc_seconds(r.get("submitted_at")))]
        if late:
            cells.append(_cell(late_text(r), "" if r.get("late_days") is None else r["late_days"]))
        out.append(f"<tr>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)
