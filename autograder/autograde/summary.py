"""The class summary written next to the results: the submissions that need a person and why, every
submission's row (score, status, times, late days, its feedback page), per-step pass rates, the score
distribution, the misconceptions diagnosed per step (with who), the slowest submissions, and after a regrade
who gained or lost points where; as summary.json, summary.md and the dashboard summary.html
(autograder/pages/dashboard.py), and the last lines ``grade autograde`` prints (``terminal_lines``)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from autograder.course import Course
from autograder.export.roster import RosterError, read_roster

from autograder.outputs import decision
from autograder.outputs.results import ResultsError, read, write_atomic
from autograder.pages import changes as regrade_changes, dashboard
from autograder.pages import class_list
from autograder.pages import misconceptions


def collect(out: Path, unreadable: dict[str, str] | None = None) -> dict[str, dict]:
    """Every submission's results in ``out``; those that cannot be read go to ``unreadable`` (name -> why)."""
    results = {}
    for path in sorted(out.glob("*/results.json")):
        try:
            results[path.parent.name] = read(path).as_json()
        except ResultsError as exc:
            if unreadable is not None:
                unreadable[path.parent.name] = str(exc)
    return results


def misconception_counts(course: Course, results: dict[str, dict]) -> dict[str, list[dict]]:
    """Per step, each misconception diagnosed (``misconception:<id>`` tags): how many students, and who."""
    found: dict[str, dict[str, list[str]]] = {}
    for name, result in sorted(results.items()):
        for test in result.get("tests", []):
            step = test.get("name", "").split(" ", 1)[0]
            for mid in misconceptions.from_tags(test.get("tags") or []):
                who = found.setdefault(step, {}).setdefault(mid, [])
                if name not in who:
                    who.append(name)
    return {step: [{"id": mid, "label": misconceptions.label(mid), "students": len(who), "who": who}
                   for mid, who in sorted(found[step].items(), key=lambda kv: (-len(kv[1]), kv[0]))]
            for step in course.steps if step in found}


def slowest(results: dict[str, dict], n: int = 5) -> list[dict]:
    timed = [(r.get("execution_time"), name) for name, r in results.items() if r.get("execution_time") is not None]
    return [{"submission": name, "seconds": t} for t, name in sorted(timed, key=lambda x: (-x[0], x[1]))[:n]]


def build(course: Course, results: dict[str, dict], grader_errors: list[str] = (), previous: dict | None = None,
          *, unreadable: dict[str, str] | None = None, pages: set[str] | None = None, roster=None,
          decisions: dict | None = None) -> dict:
    """``unreadable``: submission -> why its results.json cannot be read; ``pages``: the submissions with a
    feedback.html (None: all); ``roster``: the roster's students when ``grade autograde --roster`` gave one;
    ``decisions``: submission -> what a person recorded (decision.json: outputs/decision.py)."""
    top = course.max_points()
    rows, needs = class_list.build(course, results, grader_errors, unreadable, pages, roster, decisions)
    scores = sorted(r.get("score", 0.0) for r in results.values())
    steps = {}
    for step, spec in course.steps.items():
        passed = 0
        for result in results.values():
            mine = [t for t in result.get("tests", []) if t.get("name", "").startswith(step + " ")]
            passed += bool(mine) and all(t.get("status") == "passed" for t in mine)
        steps[step] = {"title": spec.title, "passed": passed,
                       "pass_rate": round(passed / len(results), 4) if results else 0.0}
    buckets = [0] * 10
    for score in scores:
        buckets[min(9, int(10 * score / top))] += 1 if top else 0
    return {
        "submissions": len(results),
        "max_score": top,
        # who needs a person, and why (autograder/pages/class_list.py); each reason's category, why and detail
        "needs_person": [e for e in needs if not e.get("decision")],
        # the hand-ins a person decided (grade decide: decision.json), with what the kit found
        "decided": [e for e in needs if e.get("decision")],
        "roster": None if roster is None else len(roster),
        # every submission: score, status, grading time, submitted_at, late days, its feedback page
        "table": rows,
        "full_marks": sum(s == top for s in scores),
        "zero": sum(s == 0 for s in scores),
        "mean": round(statistics.fmean(scores), 3) if scores else None,
        "median": statistics.median(scores) if scores else None,
        "min": scores[0] if scores else None,
        "max": scores[-1] if scores else None,
        "distribution": [{"from_percent": 10 * i, "to_percent": 10 * (i + 1), "submissions": n}
                         for i, n in enumerate(buckets)],
        "steps": steps,
        "grader_errors": list(grader_errors),  # submissions where the grader itself failed (grader_errors.log)
        "misconceptions": misconception_counts(course, results),
        "slowest": slowest(results),
        # after a regrade (--force, or changed suites or solutions): who gained or lost points on which step
        "changes": regrade_changes.compare(previous or {}, results),
        "regraded": len(previous or {}),
    }


#: every character with a meaning in Markdown (CommonMark's escapable punctuation), raw HTML's included
_MARKDOWN = frozenset("\\`*_{}[]()<>#+-.!|~\"'&=:")


def _cell(text) -> str:
    """The kit's own words in a table cell: on one line, its pipes escaped (Markdown of the kit's, shown as such)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md(text) -> str:
    """``text`` as literal Markdown: every character with a meaning escaped, on one line. A submission's name comes
    from the hand-in (the LMS's export, a student's folder): a link or an image in it must not become one in the
    instructor's viewer."""
    return "".join("\\" + c if c in _MARKDOWN else " " if c in "\r\n" else c for c in str(text))


def _reason_markdown(why: dict) -> str:
    return " ".join(filter(None, [_md(why["why"]), why["detail"] and (
        f"({_md(why['detail'])})" if why["why"] else _md(why["detail"]))]))


def needs_person_markdown(summary: dict) -> list[str]:
    needs = summary.get("needs_person") or []
    decided = summary.get("decided") or []
    if not needs:
        lines = ["## Needs a person", "", "None: every submission was graded in full, within its limits"
                 + (", or decided by a person." if decided else ".")
                 + (" Every roster student handed one in." if summary.get("roster") is not None else ""), ""]
    else:
        lines = [f"## Needs a person: {len(needs)}", ""]
        for category, found in class_list.by_category(needs).items():
            lines += [f"### {class_list.CATEGORIES[category]} ({len(found)})", ""]
            lines += [f"- **{_md(class_list.who(entry))}**: " + "; ".join(_reason_markdown(why) for why in reasons)
                      + (f" [feedback]({entry['feedback']})" if entry.get("feedback") else "")
                      for entry, reasons in found]
            lines.append("")
    if decided:
        lines += [f"### {class_list.DECIDED} ({len(decided)})", ""]
        for entry in decided:
            was = "; ".join(_reason_markdown(why) for why in entry["reasons"])
            lines.append(f"- **{_md(class_list.who(entry))}**: {_md(entry['decision'])}"
                         + (f" (the kit: {was})" if was else "")
                         + (f" [feedback]({entry['feedback']})" if entry.get("feedback") else ""))
        lines.append("")
    return lines


def table_markdown(summary: dict) -> list[str]:
    rows = summary.get("table") or []
    late = class_list.has_late_policy(rows)
    head = ["submission", "score", "status", "grading time (s)", "submitted", *(["late"] if late else []), "feedback"]
    lines = ["## Submissions", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        cells = [_md(r["submission"]), "" if r["score"] is None else f"{r['score']:g}/{r['max_score']:g}",
                 _md(r["status"]),
                 "" if r.get("execution_time") is None else f"{r['execution_time']:.2f}",
                 _md(r.get("submitted_at") or ""),
                 *([class_list.late_text(r)] if late else []),
                 f"[feedback.html]({r['feedback']})" if r.get("feedback") else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def terminal_lines(summary: dict, out: Path, most: int = 10) -> list[str]:
    """The last lines of ``grade autograde``: who a person decided, then who needs a person and why (at most
    ``most``, then where the rest are)."""
    needs = summary.get("needs_person") or []
    decided = summary.get("decided") or []
    lines = [f"decided by a person: {len(decided)} ({', '.join(class_list.who(e) for e in decided[:most])}"
             f"{' ...' if len(decided) > most else ''})"] if decided else []
    if not needs:
        return [*lines, "needs a person: none"]
    lines.append(f"needs a person: {len(needs)} (see {out / 'summary.html'})")
    lines += [f"  {class_list.one_line(entry)}" for entry in needs[:most]]
    if len(needs) > most:
        lines.append(f"  and {len(needs) - most} more: see {out / 'summary.html'}")
    return lines


def as_markdown(summary: dict) -> str:
    lines = [f"# Class summary: {summary['submissions']} submissions", "",
             f"Score out of {summary['max_score']:g}: mean {summary['mean']}, median {summary['median']}, "
             f"min {summary['min']}, max {summary['max']}; {summary['full_marks']} with full marks, "
             f"{summary['zero']} with zero.", ""]
    lines += needs_person_markdown(summary)
    lines += table_markdown(summary)
    lines += ["## Scores", "", "| score (% of max) | submissions |", "| --- | --- |"]
    lines += [f"| {b['from_percent']}-{b['to_percent']}% | {b['submissions']} |" for b in summary["distribution"]]
    lines += ["", "| step | passed | pass rate |", "| --- | --- | --- |"]
    lines += [f"| {step} ({s['title']}) | {s['passed']} | {100 * s['pass_rate']:.0f}% |"
              for step, s in summary["steps"].items()]
    if summary.get("misconceptions"):
        lines += ["", "| step | likely misconception | students | who |", "| --- | --- | --- | --- |"]
        lines += [f"| {step} | {_cell(m['label'])} | {m['students']} | "
                  f"{_md(', '.join(m['who'][:12]))}{' ...' if len(m['who']) > 12 else ''} |"
                  for step, found in summary["misconceptions"].items() for m in found]
    if summary.get("changes"):
        lines += ["", f"Regraded {summary['regraded']} submission(s); points that changed:", "",
                  "| submission | step | before | after |", "| --- | --- | --- | --- |"]
        lines += [f"| {_md(c['submission'])} | {c['step']} | {c['before']:g} | {c['after']:g} |"
                  for c in summary["changes"]]
    if summary.get("grader_errors"):
        lines += ["", f"**The grader itself failed** while grading {len(summary['grader_errors'])} submission(s): "
                  f"{_md(', '.join(summary['grader_errors']))}. Their tracebacks are in grader_errors.log; fix the "
                  "suite and re-run (the grader's hash changes, so they are graded again)."]
    return "\n".join(lines) + "\n"


def similar_pairs(out: Path, n: int = 10) -> list[dict]:
    """The ``n`` most similar pairs that ``grade similarity --out`` this folder found, if it was run."""
    try:
        pairs = json.loads((out / "similarity.json").read_text(encoding="utf-8"))
        return [{"a": str(p["a"]), "b": str(p["b"]), "score": float(p["score"]), "steps": [str(s) for s in p["steps"]]}
                for p in pairs[:n]]
    except (OSError, ValueError, TypeError, KeyError):
        return []


def with_similar_pairs(out: Path, summary: dict) -> dict:
    """``summary`` with the top pairs of ``out/similarity.json``; the dashboard lists them."""
    return {**summary, "similar_pairs": similar_pairs(out)}


def add_similar_pairs(out: Path) -> bool:
    """Where ``out`` is a results folder of ``grade autograde``, its summary and dashboard gain the top pairs of
    ``grade similarity``; False when ``out`` holds no summary (then similarity.html is the report)."""
    try:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    _store(out, with_similar_pairs(out, summary))
    return True


def decisions_in(out: Path, unreadable: dict[str, str] | None = None) -> dict:
    """Every decision a person recorded in ``out`` (``*/decision.json``); one that cannot be read goes to
    ``unreadable`` (name -> why), as a results.json that cannot be."""
    found = {}
    for path in sorted(out.glob(f"*/{decision.FILE}")):
        try:
            found[path.parent.name] = decision.read(path.parent)
        except decision.DecisionError as exc:
            if unreadable is not None:
                unreadable[path.parent.name] = str(exc)
    return found


def write(course: Course, out: Path, grader_errors: list[str] = (), previous: dict | None = None, roster=None,
          roster_file: Path | None = None) -> dict:
    """``previous``: submission -> step -> points before this run regraded it (pages/changes.snapshot);
    ``roster``: the roster's students (export/roster.py), or None: then nothing is said about a roster;
    ``roster_file``: where it was read, kept in summary.json for ``refresh``."""
    unreadable: dict[str, str] = {}
    results = collect(out, unreadable)
    decided = decisions_in(out, unreadable)
    pages = {p.parent.name for p in out.glob("*/feedback.html")}
    summary = with_similar_pairs(out, build(course, results, grader_errors, previous, unreadable=unreadable,
                                            pages=pages, roster=roster, decisions=decided))
    if roster_file is not None:
        summary["roster_file"] = str(Path(roster_file).resolve())
    _store(out, summary)
    return summary


def refresh(course: Course, out: Path) -> dict | None:
    """The class summary of ``out`` written again from its results and decisions (``grade decide``), keeping what
    only the run knew: the grader's failures, the regrade's changes, the roster it was given. None when ``out``
    holds no summary yet."""
    try:
        before = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    roster = None
    if before.get("roster_file"):
        try:
            roster = read_roster(Path(before["roster_file"]))
        except RosterError:
            roster = None
    summary = write(course, out, list(before.get("grader_errors") or []), roster=roster,
                    roster_file=before.get("roster_file") if roster is not None else None)
    summary.update(changes=before.get("changes") or [], regraded=before.get("regraded") or 0)
    _store(out, summary)
    return summary


def _store(out: Path, summary: dict) -> None:
    """The one writer of the class summary: summary.json, summary.md and the dashboard summary.html, from one dict."""
    write_atomic(out / "summary.json", summary)
    (out / "summary.md").write_text(as_markdown(summary), encoding="utf-8")
    dashboard.write(out / "summary.html", summary)
