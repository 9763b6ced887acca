"""The feedback pages as a person sees them: `grade autograde` and `grade check --html` on the sample class,
opened in a real headless Chromium; the class dashboard, before and after a regrade."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from .conftest import ROOT, run_grade

SAMPLES = ROOT / "samples" / "submissions"
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def graded(graded_samples):
    """alice, bob, carol and dave graded with the defaults, once per run (tests/support/built_for_the_run.py)."""
    return graded_samples


def load(graded, name):
    return json.loads((graded["out"] / name / "results.json").read_text())


def test_each_submission_gets_a_self_contained_page(graded):
    for name in ("alice", "bob", "carol", "dave"):
        html = (graded["out"] / name / "feedback.html").read_text()
        assert "<script" not in html and not re.search(r"(src|href)=\"(https?:)?//", html), name
        assert html.count("<section class=\"card") == 24, name  # one card per step
    bob = (graded["out"] / "bob" / "feedback.html").read_text()
    assert "likely: forgot the 1/sqrt(d_k) scaling" in bob
    assert "data:image/png;base64," in bob and "Largest mismatches" in bob
    alice = (graded["out"] / "alice" / "feedback.html").read_text()
    assert "<img" not in alice  # nothing fails: nothing is drawn


def test_pages_render_in_chromium_with_their_pictures(graded, browser, tmp_path):
    for name, pictures in (("alice", 0), ("bob", 1), ("carol", 1), ("dave", 0)):
        view = browser.open(graded["out"] / name / "feedback.html")
        assert view.console_errors == [], name
        assert view.broken_images() == [], name
        assert view.images() >= pictures, name
        widths = view.page.evaluate("() => Array.from(document.images).map(i => i.naturalWidth)")
        assert all(w > 100 for w in widths), (name, widths)
        assert "points" in view.text()
        shot = view.screenshot(tmp_path / f"{name}.png")
        assert shot.stat().st_size > 10_000
        if name in ("bob", "carol"):  # the pictures are on screen, not hidden: visible boxes of real size
            boxes = view.page.evaluate("() => Array.from(document.images).map(i => i.getBoundingClientRect().width)")
            assert all(b > 100 for b in boxes), boxes
        if name == "carol":  # a count that passed reads green even inside a failed step's card
            colours = view.page.evaluate("""() => Array.from(document.querySelectorAll('section.card.failed .status'))
                .map(e => [e.textContent.trim(), getComputedStyle(e).color])""")
            assert ("passed", "rgb(46, 125, 50)") in [tuple(c) for c in colours], colours
            assert all(c != "rgb(198, 40, 40)" for text, c in colours if text == "passed"), colours
        # what failed comes first, on the first screen, and links to its cards; the passed steps are folded
        failed = view.page.evaluate("""() => Array.from(document.querySelectorAll('nav.failed-list li a'))
            .map(a => a.getAttribute('href').slice(1))""")
        cards_failed = view.page.evaluate("""() => Array.from(document.querySelectorAll('section.card'))
            .filter(s => !s.classList.contains('passed')).map(s => s.id)""")
        assert failed == cards_failed and (failed != []) == (name != "alice"), (name, failed)  # dave: stubs
        assert view.page.evaluate("() => document.querySelector('nav.failed-list').getBoundingClientRect().bottom "
                                  "< innerHeight"), name
        assert view.page.evaluate("""() => Array.from(document.querySelectorAll('section.card.passed'))
            .every(s => !s.checkVisibility())"""), name
        assert view.page.evaluate("""() => Array.from(document.querySelectorAll('section.card h2'))
            .every(h => h.scrollWidth <= h.clientWidth + 1)"""), name
        if name == "carol" and os.environ.get("UPDATE_DOCS_SCREENSHOTS"):
            # her page down to the fold: the total, what failed, her failed card with its pictures, the passed steps
            # folded
            view.page.set_viewport_size({"width": 1000, "height": 900})
            bottom = view.page.evaluate("() => document.querySelector('details.passed-steps > summary')"
                                        ".getBoundingClientRect().bottom + scrollY + 8")
            view.page.screenshot(path=str(DOCS / "feedback-page.png"), full_page=True,
                                 clip={"x": 0, "y": 0, "width": 1000, "height": bottom})
    dashboard = browser.open(graded["out"] / "summary.html")
    assert dashboard.console_errors == [] and dashboard.broken_images() == [] and dashboard.images() == 1
    text = dashboard.text()
    assert "forgot the 1/sqrt(d_k) scaling" in text and "bob" in text and "Slowest submissions" in text
    dashboard.screenshot(tmp_path / "summary.png")
    # everyone here was graded in full (docs/dashboard.png: test_needs_a_person.py)
    assert "Needs a person: none" in text


def test_gradescope_gets_the_same_feedback_as_html_under_a_megabyte(graded):
    for name in ("alice", "bob", "carol", "dave"):
        path = graded["out"] / name / "results.json"
        result = json.loads(path.read_text())
        assert path.stat().st_size < 1_000_000
        assert result["output_format"] == "html" and result["test_output_format"] == "text"
        assert "Isolation" not in result["output"] and result["extra_data"]["isolation"]  # the instructor's only
        assert "Isolation" not in (graded["out"] / name / "feedback.html").read_text()
        assert all("<" not in t["output"] for t in result["tests"])  # the tests' words stay text
    bob = load(graded, "bob")
    assert bob["output"].count("data:image/png;base64,") == 1  # values and gradients: one case, drawn once
    # the gradients count points to [values] (said once) and draws nothing of its own
    assert "the output of this case is wrong as shown under [values]; the gradients differ too" in bob["output"]
    hidden = [t for t in bob["tests"] if t["visibility"] != "visible" and t["status"] == "failed"]
    assert hidden and all(t["name"].split(":")[0] not in bob["output"] for t in hidden)  # not before publishing


def test_misconceptions_are_tagged_and_counted(graded):
    tags = {t["name"]: t["tags"] for t in load(graded, "bob")["tests"]}
    assert ("misconception:missing-scaling"
            in tags["trainable_attention.scaled_attention_weights values: Scaled softmax"])
    assert not any(tag.startswith("misconception:") for t in load(graded, "alice")["tests"] for tag in t["tags"])
    summary = json.loads((graded["out"] / "summary.json").read_text())
    found = summary["misconceptions"]
    assert found["trainable_attention.scaled_attention_weights"] == [
        {"id": "missing-scaling", "label": "forgot the 1/sqrt(d_k) scaling", "students": 1, "who": ["bob"]}]
    assert [m["who"] for m in found["causal_attention.CausalAttention"]] == [["carol"]]
    assert [s["submission"] for s in summary["slowest"]][:1] and len(summary["slowest"]) == 4
    assert "| trainable_attention.scaled_attention_weights | forgot the 1/sqrt(d_k) scaling | 1 | bob |" in \
        (graded["out"] / "summary.md").read_text()


def test_hidden_cases_show_only_shape_dtype_and_counts(graded):
    bob = (graded["out"] / "bob" / "feedback.html").read_text()
    facts = re.findall(r"<p>Hidden case: [^<]*</p>", bob)
    assert facts, "bob fails hidden cases of scaled_attention_weights"
    for fact in facts:
        assert re.fullmatch(r"<p>Hidden case: [\w ]+ of shape \[[\d, ]*\], float\d+; "
                            r"\d+ of \d+ entries \(\d+%\) differ\. "
                            r"Its values stay hidden\.</p>", fact), fact


def test_grade_check_html_writes_the_same_page_in_the_same_words(graded, tmp_path):
    dest = tmp_path / "mine.html"
    run = run_grade("check", str(graded["subs"] / "bob"), "--html", str(dest))
    assert run.returncode == 1
    assert f"feedback page: {dest}" in run.stdout and dest.is_file()
    mine = dest.read_text()
    graded_page = (graded["out"] / "bob" / "feedback.html").read_text()
    block = re.compile(r"<pre>(trainable_attention\.scaled_attention_weights \[values\].*?)</pre>", re.S)
    assert block.search(mine).group(1) == block.search(graded_page).group(1)
    assert mine.count("<img") >= 1
    default = run_grade("check", str(graded["subs"] / "carol"), "--step", "causal_attention", "--html", cwd=tmp_path)
    assert (tmp_path / "feedback.html").is_file() and str(tmp_path / "feedback.html") in default.stdout


def test_grade_check_draws_a_small_failing_case_in_the_terminal(graded):
    run = run_grade("check", str(graded["subs"] / "carol"), "--step", "causal_attention.CausalAttention",
                    env={"NO_COLOR": "1"})
    assert "\x1b[" not in run.stdout  # not a terminal: plain text
    assert "expected" in run.stdout and "yours" in run.stdout and "(* marks an entry that differs" in run.stdout
    assert re.search(r"^\s+1\s+-0\.587\s+0\.006\s+\|\s+-0\.199\*", run.stdout, re.M), run.stdout


def test_a_regrade_shows_who_gained_and_lost_points(graded, tmp_path, browser):
    subs, out = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(graded["subs"], subs)
    shutil.copytree(graded["out"], out)
    for path in (subs / "bob").glob("*.py"):  # bob's scaling fixed, carol's files swapped for dave's stubs
        shutil.copyfile(subs / "alice" / path.name, path)
    for path in (subs / "carol").glob("*.py"):
        shutil.copyfile(subs / "dave" / path.name, path)
    run = run_grade("autograde", str(subs), "--out", str(out), "--force")
    assert run.returncode == 0, run.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["regraded"] == 4
    bob = [c for c in summary["changes"] if c["submission"] == "bob"]
    assert bob == [{"submission": "bob", "step": "trainable_attention.scaled_attention_weights", "before": 0.0,
                    "after": 3.0, "change": 3.0}]
    carol = [c for c in summary["changes"] if c["submission"] == "carol"]
    assert carol and all(c["change"] < 0 for c in carol)
    assert not [c for c in summary["changes"] if c["submission"] in ("alice", "dave")]
    view = browser.open(out / "summary.html")
    assert view.console_errors == [] and "Regrade: before and after" in view.text()
    rows = view.page.evaluate("() => Array.from(document.querySelectorAll('table.changes tr')).map(r => r.innerText)")
    assert any("bob" in r and "+3" in r for r in rows)


def test_grade_check_imports_pillow_only_when_it_draws():
    """Students on every OS run grade check: a passing unit, or a failing one without --html, never loads it."""
    def imported(*args):
        run = subprocess.run([sys.executable, "-X", "importtime", "-m", "autograder.cli", "check", *args],
                             cwd=ROOT, capture_output=True, text=True, timeout=300,
                             env={**os.environ, "NO_COLOR": "1"})
        return {line.split("|")[-1].strip().split(".")[0] for line in run.stderr.splitlines() if "|" in line}

    step = "--step=trainable_attention.scaled_attention_weights"
    assert "PIL" not in imported("samples/submissions/alice", step)
    assert "PIL" not in imported("samples/submissions/bob", step)
    drawn = imported("samples/submissions/bob", step, "--html=/dev/null")
    assert "PIL" in drawn  # the control
    assert "matplotlib" not in drawn  # the pictures are drawn without it (0.27 s to import)
