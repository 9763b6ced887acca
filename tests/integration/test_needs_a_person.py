"""Who needs a person, and why: results.json's ``extra_data.problems``, the class summary's list and table
(summary.json, summary.md, summary.html) and the last lines of `grade autograde`.

The end-to-end test grades a mixed class through the real CLI (a correct submission, a corrupt zip, an
empty folder, a broken notebook, an infinite loop under a short step time limit, an output flood, with a
roster and submission times) and reads the dashboard in a real headless Chromium as a person would: the
list names each with its reason, the table has every submission with a link that opens its feedback
page, and a click on a column header sorts it. The old dashboard (a summary without the list) is the control.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from autograder.autograde import summary
from autograder.grading.suites import problems
from autograder.course import load_course
from autograder.export.roster import Student
from autograder.outputs.results import parse
from autograder.pages import class_list, dashboard

from .conftest import ROOT, run_grade

COURSE = load_course(ROOT / "course.yml")
TOP = COURSE.max_points()
SAMPLES = ROOT / "samples" / "submissions"
ADVERSARIAL = ROOT / "tests" / "corpus" / "adversarial"
DOCS = ROOT / "docs"
STEP = "simple_attention.attention_scores"


# -- the pieces, on made-up results (fast) -----------------------------------------------------------
def result(name: str, score: float, found: list[dict] = (), grader_errors: int = 0, submitted_at: str | None = None,
           seconds: float = 1.0) -> dict:
    extra = {"submission": name, "problems": list(found), "grader_errors": grader_errors}
    if submitted_at:
        extra["submitted_at"] = submitted_at
    return {"score": score, "execution_time": seconds, "tests": [], "extra_data": extra}


def a_class() -> dict[str, dict]:
    return {
        "alice": result("alice", TOP, submitted_at="2026-12-11T20:00:00+01:00"),
        "bob": result("bob", TOP - 3, submitted_at="2026-12-14T09:00:00+01:00"),
        "frank": result("frank", 0, problems.not_graded("corrupt", "frank.zip is not a valid .zip archive")),
        "eve": result("eve", 0, problems.not_graded("empty_folder", "eve/: none of the modules is in it")),
        "nina": result("nina", 50, problems.modules({"trainable_attention": {"type": "MalformedNotebook",
                                                                             "message": "its JSON is broken"}},
                                                    COURSE.steps_by_module())),
        "ivan": result("ivan", 78, [{"kind": "timed_out", "limit": "time", "steps": [STEP],
                                     "message": "the step ran out of its time limit (20 s)"}]),
        "olga": result("olga", 78, [{"kind": "limit", "limit": "output", "steps": [STEP],
                                     "message": "File too large"}]),
        "tom": result("tom", 78, [{"kind": "protocol", "steps": [STEP],
                                   "message": problems.SENTENCES[("protocol", None)]}]),
        "gina": result("gina", 80, grader_errors=2),
    }


@pytest.mark.unit
def test_each_problem_is_classified_from_what_the_trusted_side_saw_never_from_a_name():
    """A kind comes from the ``kind`` the trusted side set (grading/runner.py: limit_error, its output measure);
    the same type names or messages without it are the student's own errors (a worker's answer never keeps a
    ``kind``: sandbox/answers.py), whatever they are called."""
    assert problems.classify({"kind": "limit", "limit": "time"}) == ("timed_out", "time")
    assert problems.classify({"kind": "limit", "limit": "submission time"}) == ("timed_out", "submission time")
    assert problems.classify({"kind": "limit", "limit": "output"}) == ("limit", "output")
    assert problems.classify({"kind": "died", "message": "segmentation fault"}) == ("crashed", None)
    assert problems.classify({"kind": "protocol"}) == ("protocol", None)
    # controls: a student's errors named like the kit's, or raised at a limit, are the student's own
    for named in ({"type": "LimitExceeded", "limit": "time"}, {"type": "Tampering"}, {"type": "WorkerDied"},
                  {"type": "MemoryError", "message": ""}, {"type": "OSError", "message": "[Errno 27] File too large"},
                  {"type": "ZeroDivisionError", "message": "division by zero"}):
        assert problems.classify(named) is None, named
    found = problems.modules({"trainable_attention": {"type": "UnreadableSource", "message": "not UTF-8",
                                                      "cause": "not_utf8"},
                              "causal_attention": {"type": "MissingModule", "message": "missing"}},
                             COURSE.steps_by_module())
    assert [(p["module"], p["cause"]) for p in found] == [("trainable_attention", "not_utf8"),
                                                          ("causal_attention", "missing")]
    assert found[0]["steps"][0] == "trainable_attention.init_qkv"
    recorder = problems.Recorder(lambda step, request: {"ok": False, "error": {"kind": "limit", "limit": "time",
                                                                               "message": "out of time at INPUT 0.7"}})
    for step in (STEP, STEP, "simple_attention.normalize_sum"):
        recorder(step, {})
    # in the kit's own words: never the error's message
    assert recorder.problems() == [{"kind": "timed_out", "limit": "time", "message": "ran out of its time limit",
                                    "steps": [STEP, "simple_attention.normalize_sum"]}]


@pytest.mark.unit
def test_the_list_names_who_and_why_and_the_table_has_everyone():
    roster = [Student(2, "Alice A", login="alice"), Student(3, "Zoe Z", login="zoe"), Student(4, "Bob B", login="bob")]
    built = summary.build(COURSE, a_class(), ["gina"], roster=roster)
    reasons = {class_list.who(e): [(r["category"], r["why"]) for r in e["reasons"]] for e in built["needs_person"]}
    assert reasons["frank"][0] == ("not_graded", "corrupt zip")
    assert reasons["eve"][0] == ("not_graded", "empty folder")
    assert reasons["nina"][0] == ("module_not_graded", "trainable_attention: broken notebook")
    assert reasons["ivan"][0][0] == "timed_out" and STEP in reasons["ivan"][0][1]
    assert reasons["olga"][0][0] == "limit" and reasons["olga"][0][1].startswith("output size")
    assert reasons["tom"][0][0] == "protocol" and reasons["gina"][0][0] == "grader_error"
    assert ("not_on_roster", "") in reasons["frank"] and reasons["Zoe Z (zoe)"] == [("no_submission", "")]
    assert "alice" not in reasons and "bob" not in reasons
    order = [e["reasons"][0]["category"] for e in built["needs_person"]]
    assert order == sorted(order, key=list(class_list.CATEGORIES).index)  # most urgent first
    rows = {r["submission"]: r for r in built["table"]}
    assert sorted(rows) == sorted(a_class()) and rows["frank"]["feedback"] == "frank/feedback.html"
    assert rows["alice"]["late"] == "on_time" and rows["bob"]["late"] == "late" and rows["bob"]["late_days"] == 3
    assert rows["frank"]["late"] == "undated" and rows["frank"]["status"] == "not graded, not on roster"
    assert rows["alice"]["student"] == "Alice A (alice)" and rows["alice"]["status"] == "graded"
    md = summary.as_markdown(built)
    assert "## Needs a person: 8" in md and "- **frank**: corrupt zip" in md and "[feedback](frank/feedback.html)" in md
    assert "| bob | 78/81 | graded |" in md and "3 days late (-30%)" in md


@pytest.mark.unit
def test_without_a_roster_nothing_is_said_about_one():
    built = summary.build(COURSE, a_class(), [])
    categories = {r["category"] for e in built["needs_person"] for r in e["reasons"]}
    assert not categories & {"not_on_roster", "ambiguous", "no_submission"} and built["roster"] is None
    html = dashboard.page(built)
    assert "roster" not in html.lower() and "<th scope=\"col\" data-type=\"text\">student</th>" not in html


@pytest.mark.unit
def test_the_terminal_names_at_most_ten_then_says_where_the_rest_are(tmp_path):
    many = {f"s{i:02d}": result(f"s{i:02d}", 0, problems.not_graded("corrupt", "not a zip")) for i in range(13)}
    lines = summary.terminal_lines(summary.build(COURSE, many, []), tmp_path)
    assert lines[0] == f"needs a person: 13 (see {tmp_path / 'summary.html'})"
    assert lines[1:11] == [f"  s{i:02d}: not graded (corrupt zip)" for i in range(10)]
    assert lines[11:] == [f"  and 3 more: see {tmp_path / 'summary.html'}"]
    assert summary.terminal_lines(summary.build(COURSE, {"a": result("a", TOP)}, []), tmp_path) == [
        "needs a person: none"]


@pytest.mark.unit
def test_results_json_keeps_gradescopes_shape_with_the_problems():
    data = result("nina", 50, problems.not_graded("corrupt", "x"))
    parsed = parse(data)
    assert parsed.extra_data.problems[0].kind == "not_graded" and parsed.extra_data.problems[0].cause == "corrupt"
    old = {"score": 1.0, "tests": [], "extra_data": {"submission": "old"}}  # written before there were problems
    assert parse(old).extra_data.problems == []


# -- a real class, graded through the CLI, read in Chromium ------------------------------------------
CORRECT = ("alice", "bob", "carol", "dave")  # graded in full (bob and carol lose points, dave has stubs)
WHY = {"frank": ("Not graded", "corrupt zip"), "eve": ("Not graded", "empty folder"),
       "nina": ("A module not graded", "trainable_attention: broken notebook"),
       "infinite_loop": ("Timed out", f"step time limit, {STEP}"),
       "output_flood": ("Limits hit", f"output size, {STEP}"),
       "Zoe Z (zoe)": ("On the roster, no submission", "")}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, short_course_file):
    base = tmp_path_factory.mktemp("mixed")
    subs = base / "subs"
    subs.mkdir()
    for name in CORRECT:
        shutil.copytree(SAMPLES / name, subs / name)
    (subs / "frank.zip").write_bytes(b"PK\x03\x04 this is not really a zip archive " * 20)
    (subs / "eve").mkdir()
    shutil.copytree(SAMPLES / "alice", subs / "nina")
    (subs / "nina" / "trainable_attention.py").unlink()
    (subs / "nina" / "trainable_attention.ipynb").write_text('{"cells": [', encoding="utf-8")
    for name in ("infinite_loop", "output_flood"):
        shutil.copytree(ADVERSARIAL / name, subs / name)
    roster = base / "roster.csv"
    roster.write_text("name,login\n" + "".join(f"{n.title()},{n}\n" for n in (*CORRECT, "frank", "eve", "nina",
                                                                                "infinite_loop", "output_flood"))
                      + "Zoe Z,zoe\n", encoding="utf-8")
    times = base / "times.csv"
    times.write_text("submission,submitted_at\nalice,2026-12-11T20:00:00+01:00\nbob,2026-12-13T10:00:00+01:00\n",
                     encoding="utf-8")
    tmp = base / "tmp"  # its own temp folder: no other run on the machine sweeps its scratch folders
    tmp.mkdir()
    out = base / "out"
    run = run_grade("autograde", str(subs), "--out", str(out), "--course", str(short_course_file),
                    "--roster", str(roster), "--times", str(times), env={"TMPDIR": str(tmp)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return {"out": out, "stdout": run.stdout,
            "names": [*CORRECT, "frank", "eve", "nina", "infinite_loop", "output_flood"]}


def needs_list(view) -> dict[str, list[tuple[str, str]]]:
    """What the dashboard's list says, as a person reads it: name -> [(heading, text of the item)]."""
    return view.page.evaluate("""() => {
        const found = {};
        for (const li of document.querySelectorAll('#needs-a-person li')) {
            let heading = li.closest('ul').previousElementSibling;
            (found[li.dataset.submission] ||= []).push([heading.textContent.replace(/ \\(\\d+\\)$/, ''), li.innerText]);
        }
        return found;
    }""")


def table(view) -> list[list[str]]:
    return view.page.evaluate("""() => Array.from(document.querySelectorAll('#submissions tbody tr'))
        .map(tr => Array.from(tr.cells).map(td => td.innerText.trim()))""")


def test_results_json_says_why_as_data(mixed):
    def problem(name):
        return json.loads((mixed["out"] / name / "results.json").read_text())["extra_data"]["problems"]

    assert problem("frank") == [{"kind": "not_graded", "cause": "corrupt",
                                 "message": "frank.zip is not a valid .zip archive (it may be corrupt or truncated)"}]
    assert problem("eve")[0]["cause"] == "empty_folder"
    assert [(p["kind"], p["cause"], p["module"]) for p in problem("nina")] == \
        [("module_not_graded", "broken_notebook", "trainable_attention")]
    assert [(p["kind"], p["limit"], p["steps"]) for p in problem("infinite_loop")] == [("timed_out", "time", [STEP])]
    assert [(p["kind"], p["limit"], p["steps"]) for p in problem("output_flood")] == [("limit", "output", [STEP])]
    for name in CORRECT:
        assert problem(name) == [], name


def test_the_last_lines_name_who_needs_a_person(mixed):
    lines = mixed["stdout"].rstrip("\n").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("needs a person: "))
    assert lines[start] == f"needs a person: 6 (see {mixed['out'] / 'summary.html'})"
    named = lines[start + 1:]
    assert len(named) == 6 and start + 7 == len(lines)  # the last lines of the run
    for who, (_heading, why) in WHY.items():
        assert any(line.startswith(f"  {who}: ") and why in line for line in named), (who, named)
    saved = json.loads((mixed["out"] / "summary.json").read_text())
    assert sorted(class_list.who(e) for e in saved["needs_person"]) == sorted(WHY)
    assert sorted(r["submission"] for r in saved["table"]) == sorted(mixed["names"])
    md = (mixed["out"] / "summary.md").read_text()
    assert "## Needs a person: 6" in md and "- **frank**: corrupt zip" in md and "| eve | 0/81 | not graded |" in md


def test_the_dashboard_names_each_with_its_reason_and_links_and_sorts_every_submission(mixed, browser, tmp_path):
    view = browser.open(mixed["out"] / "summary.html")
    assert view.console_errors == [] and view.broken_images() == []
    found = needs_list(view)
    assert sorted(found) == sorted(WHY), found
    for who, (heading, why) in WHY.items():
        assert [h for h, _ in found[who]] == [heading], (who, found[who])
        assert why in found[who][0][1], (who, found[who])
    assert "no roster student" not in view.text()  # every submission's name is on the roster
    # the list sits at the top: before the scores
    assert view.page.evaluate("() => document.querySelector('#needs-a-person').getBoundingClientRect().top "
                              "< document.querySelector('figure').getBoundingClientRect().top")

    rows = table(view)
    assert [r[0] for r in rows] == sorted(mixed["names"], key=str.lower)  # name order without a click
    by_name = {r[0]: r for r in rows}
    assert by_name["alice"][2] == f"{TOP:g}/{TOP:g}" and by_name["frank"][3] == "not graded"
    assert by_name["alice"][-1] == "on time" and by_name["bob"][-1].startswith("2 days late")
    assert by_name["alice"][5] == "2026-12-11 20:00 +01:00" and by_name["carol"][-1] == "no time known"
    # every link opens that submission's feedback page
    hrefs = view.page.evaluate("() => Array.from(document.querySelectorAll('#submissions tbody a')).map(a => a.href)")
    assert len(hrefs) == len(mixed["names"])
    for name in mixed["names"]:
        view.page.click(f"#submissions tbody a:text-is('{name}')")
        view.page.wait_for_load_state()
        assert view.page.title() == f"Feedback: {name}", name
        view.page.go_back()
    # sorting: a click on a header sorts by it, a second click the other way; empty cells stay last
    view.page.click("#submissions th >> text=score")
    scores = [float(r[2].split("/")[0]) for r in table(view)]
    assert scores == sorted(scores) and scores[0] == 0
    assert view.page.get_attribute("#submissions th:nth-child(3)", "aria-sort") == "ascending"
    assert "Sorted by score, ascending" in view.page.inner_text("#submissions caption")
    view.page.click("#submissions th >> text=score")
    assert [float(r[2].split("/")[0]) for r in table(view)] == sorted(scores, reverse=True)
    view.page.click("#submissions th >> text=grading time")
    times = [r[4] for r in table(view)]
    filled = [float(t) for t in times if t]
    assert filled == sorted(filled) and times[len(filled):] == [""] * (len(times) - len(filled))
    assert set(times[len(filled):]) <= {""} and len(filled) == len(mixed["names"]) - 2  # frank and eve: not run
    view.page.click("#submissions th >> text=status")
    assert table(view)[0][0] in ("eve", "frank") and table(view)[-1][3] == "graded"
    view.page.click("#submissions th >> text=submission")
    assert [r[0] for r in table(view)] == sorted(mixed["names"], key=str.lower)
    view.screenshot(tmp_path / "dashboard.png")
    if os.environ.get("UPDATE_DOCS_SCREENSHOTS"):
        view.page.click("#submissions th >> text=status")
        view.page.set_viewport_size({"width": 1100, "height": 1000})
        view.page.screenshot(path=str(DOCS / "dashboard.png"), full_page=True)

    # without script: the same table, in name order, with its links; the list is plain HTML
    context = view.page.context.browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto((mixed["out"] / "summary.html").resolve().as_uri())
        names = page.locator("#submissions tbody tr td:first-child").all_inner_texts()
        assert "In name order." in page.inner_text("#submissions caption")
        assert names == sorted(mixed["names"], key=str.lower)
        assert page.locator("#needs-a-person li").count() == len(WHY)
    finally:
        context.close()


def test_control_the_old_dashboard_has_no_such_list(mixed, browser, tmp_path):
    """The same class's summary without the list and the table (as summary.json was before): the reading above
    finds nothing in it, so what it found came from the list."""
    saved = json.loads((mixed["out"] / "summary.json").read_text())
    old = {k: v for k, v in saved.items() if k not in ("needs_person", "table", "roster")}
    path = dashboard.write(mixed["out"] / "old-summary.html", old)
    view = browser.open(path)
    assert view.console_errors == []
    assert needs_list(view) == {} and table(view) == []
    assert "frank" not in view.text() and "corrupt zip" not in view.text()
    assert "3 with zero" in view.text()  # the old page: counts, no names
