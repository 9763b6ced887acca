"""Deadline day, the class as an LMS hands it over: 34 mixed hand-ins, plus an empty folder named on the command
line, a .tar.gz, a single .py and a .txt, graded through the command line as a new instructor would, then exported to
Canvas, Moodle and a plain CSV and pushed through LTI to a real (independent) LTI 1.3 platform on loopback.

What must hold, each with its control:
- every entry handed in is graded, or named under "needs a person" with its reason, exactly once: in the terminal,
  summary.json, summary.md and the dashboard (read in Chromium); a note beside a hand-in counts with it, several
  hand-ins under one name are one hand-in, a broken notebook for all is one entry, a renamed module names its rename
  and the 8 steps it costs;
- a hand-in the kit never graded is blank in every export format and not posted by lti push, named in both reports;
  a recorded decision (grade decide) is exported and posted, and a --force regrade keeps it; --ungraded zero is the
  explicit way to export the kit's zeros;
- a student's syntax error never reaches grader_errors.log, and the student reads their own line whole, digits
  included, on a hidden count; a module import the student bundle lacks is one line.
(tests/integration/test_deadline_day_replay.py replays Ctrl-C, resume and --force on another class.)
"""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from autograder.pages import class_list
from autograder.worker import importable

from .conftest import ROOT, run_grade
from tests.support.submission_forms import module_notebooks, one_notebook, zipped
from tests.integration.test_needs_a_person import needs_list

CORPUS = ROOT / "tests" / "corpus" / "submissions"
SAMPLES = ROOT / "samples" / "submissions"
#: the hand-ins that need a person, and what the list says of each (category, words in its reason)
NEEDS = {
    "frank": ("not_graded", "corrupt zip"),
    "nina": ("not_graded", "broken notebook"),
    "hal": ("not_graded", "several hand-ins under one name"),
    "late_empty": ("not_graded", "empty folder"),
    "pete": ("not_graded", "a single .py not named after a module"),
    "quinn": ("not_graded", "not code"),
    "ren": ("module_not_graded", "causal_attention (1).py is there: rename it"),
    "rena": ("module_not_graded", "causal_attention-1.py is there: rename it"),
    "grace": ("beside", "grace.txt"),
}
#: never graded by the kit: blank in every export, not posted
NEVER_GRADED = {"frank", "nina", "hal", "late_empty", "pete", "quinn"}
SYNTAX_LINE = "pip install -q torch==2.13.0"


def build_class(base: Path) -> tuple[Path, Path, list[str]]:
    """The folder of hand-ins (34 mixed, plus a .tar.gz, a single .py and a .txt) and the empty folder named on the
    command line; every hand-in's name."""
    subs = base / "subs"
    subs.mkdir()
    names = []

    def add(name):
        names.append(name)
        return name

    for sample in ("alice", "bob", "carol", "dave"):
        shutil.copytree(SAMPLES / sample, subs / add(sample))
    corpus = sorted(p for p in CORPUS.iterdir() if p.is_dir() and p.name not in ("syntax_error", "hang_and_exit"))
    for i, source in enumerate(corpus[:22]):
        name = add(source.name)
        if i % 4 == 0:
            zipped(source, subs / f"{name}.zip", prefix="attention/" if i % 8 == 0 else "")
        elif i % 4 == 1:
            one_notebook(source, subs, headings=True, name=f"{name}.ipynb")
        elif i % 4 == 2:
            module_notebooks(source, subs / name)
        else:
            shutil.copytree(source, subs / name / "handin", ignore=shutil.ignore_patterns("__pycache__"))
    # what goes wrong: 8 more, 34 in all
    (subs / f"{add('frank')}.zip").write_bytes(b"PK\x03\x04 the upload stopped half way " * 20)
    (subs / f"{add('nina')}.ipynb").write_text('{"cells": [', encoding="utf-8")  # one notebook for all, broken
    for name, renamed in (("ren", "causal_attention (1).py"), ("rena", "causal_attention-1.py")):
        shutil.copytree(SAMPLES / "alice", subs / add(name))
        (subs / name / "causal_attention.py").rename(subs / name / renamed)
    shutil.copytree(SAMPLES / "alice", subs / add("syn"))
    path = subs / "syn" / "causal_attention.py"
    path.write_text(SYNTAX_LINE + "\n" + path.read_text())
    shutil.copytree(SAMPLES / "alice", subs / add("mpl"))
    path = subs / "mpl" / "causal_attention.py"
    path.write_text("import matplotlib.pyplot as plt\n" + path.read_text())
    shutil.copytree(SAMPLES / "bob", subs / add("grace"))
    (subs / "grace.txt").write_text("My notebook would not save; the .py files are my work.", encoding="utf-8")
    shutil.copytree(SAMPLES / "carol", subs / add("hal"))
    zipped(SAMPLES / "carol", subs / "hal.zip")  # the same student twice: which counts is a person's decision
    assert len(names) == 34
    # the extras: a .tar.gz, a single .py, a .txt, and an empty folder named by name
    with tarfile.open(subs / f"{add('olga')}.tar.gz", "w:gz") as tar:
        tar.add(SAMPLES / "alice", arcname="olga", filter=lambda t: None if "__pycache__" in t.name else t)
    (subs / f"{add('pete')}.py").write_text((SAMPLES / "alice" / "causal_attention.py").read_text())
    (subs / f"{add('quinn')}.txt").write_text("I ran out of time, sorry.", encoding="utf-8")
    empty = base / add("late_empty")
    empty.mkdir()
    return subs, empty, names


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("deadline")
    subs, empty, names = build_class(base)
    roster = base / "roster.csv"
    roster.write_text("name,email,login\n" + "".join(f"{n.title()},{n}@uni.edu,{n}\n" for n in names)
                      + "Zoe Z,zoe@uni.edu,zoe\n", encoding="utf-8")
    out = base / "results"
    run = run_grade("autograde", str(subs), str(empty), "--out", str(out), "--roster", str(roster), "--jobs", "2",
                    timeout=3600)
    return {"base": base, "out": out, "run": run, "names": names, "roster": roster}


def test_every_hand_in_is_graded_or_named_once(graded, browser):
    run, out, names = graded["run"], graded["out"], graded["names"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "skipped:" not in run.stderr  # nothing scrolls away unnamed
    # the terminal: one line per hand-in as it is graded, then who needs a person, each once
    graded_lines = [line.split(":", 1)[0] for line in run.stdout.splitlines()
                    if re.match(r"^\S+: \d+(\.\d+)?/81", line)]
    assert sorted(graded_lines) == sorted(names), sorted(set(names) ^ set(graded_lines))
    lines = run.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("needs a person: "))
    assert lines[start].startswith(f"needs a person: {len(NEEDS) + 1} ")  # and zoe, on the roster, handed nothing in
    closing = [line.strip().split(":", 1)[0] for line in lines[start + 1:]]
    assert sorted(closing) == sorted([*NEEDS, "Zoe Z (zoe)"])
    # a results.json for every hand-in, and for nothing else
    assert sorted(p.parent.name for p in out.glob("*/results.json")) == sorted(names)
    # summary.json: every hand-in in the table once; who needs a person, each once, with the reason
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(r["submission"] for r in summary["table"]) == sorted(names)
    listed = [class_list.who(e) for e in summary["needs_person"]]
    assert sorted(listed) == sorted([*NEEDS, "Zoe Z (zoe)"]) and len(listed) == len(set(listed))
    for entry in summary["needs_person"]:
        if entry["submission"] in NEEDS:
            category, words = NEEDS[entry["submission"]]
            assert entry["reasons"][0]["category"] == category, entry
            assert any(words in f"{r['why']} {r['detail']}" for r in entry["reasons"]), entry
    ren = next(e for e in summary["needs_person"] if e["submission"] == "ren")
    assert "(8 step(s) score zero)" in ren["reasons"][0]["detail"]  # multihead_attention imports it: 5 + 3
    # the controls: their own
    assert not any(e["submission"] in ("syn", "mpl", "olga") for e in summary["needs_person"])
    # summary.md: each named once in its list
    md = (out / "summary.md").read_text()
    section = md.split("## Needs a person", 1)[1].split("## Submissions", 1)[0]
    for name in NEEDS:
        escaped = name.replace("_", r"\_")
        assert section.count(f"- **{escaped}**") == 1, name
    # the dashboard, as a person reads it: each once, under its heading
    view = browser.open(out / "summary.html")
    found = needs_list(view)
    assert sorted(found) == sorted([*NEEDS, "Zoe Z (zoe)"])
    assert all(len(items) == 1 for items in found.values()), found
    assert "grace.txt" in found["grace"][0][1] and "rename it" in found["ren"][0][1]


def test_a_students_own_error_is_theirs_to_read_never_the_graders_log(graded):
    out = graded["out"]
    assert not (out / "grader_errors.log").exists()
    syn = json.loads((out / "syn" / "results.json").read_text())
    hidden = [t for t in syn["tests"] if t["name"].startswith("causal_attention.") and t["visibility"] != "visible"]
    assert hidden and all(SYNTAX_LINE in t["output"] for t in hidden)  # the student's own digits, whole
    assert all("SyntaxError" in t["output"] for t in hidden)  # the control: the error itself is said
    mpl = json.loads((out / "mpl" / "results.json").read_text())
    assert any(importable.refused("matplotlib") in t["output"] for t in mpl["tests"])
    assert mpl["score"] < 81  # not 81/81 because the grader's machine has matplotlib


def canvas(out_file: Path) -> dict[str, str]:
    rows = list(csv.reader(io.StringIO(out_file.read_text())))[2:]
    return {row[0]: row[-1] for row in rows}


def test_never_graded_is_blank_everywhere_and_a_decision_is_exported_and_kept(graded):
    base, out = graded["base"], graded["out"]

    def export(fmt, *extra):
        dest = base / f"grades-{fmt}.csv"
        run = run_grade("export", "--results", str(out), "--roster", str(graded["roster"]), "--format", fmt, "--out",
                        str(dest), *extra, timeout=300)
        assert run.returncode == 0, run.stderr
        return run.stderr, dest

    report, dest = export("canvas")
    cells = canvas(dest)
    for name in NEVER_GRADED:
        assert cells[name.title()] == "", name
    assert cells["Alice"] == "81" and cells["Ren"] != ""  # graded: a missing module scores zero, as its own doing
    line = next(line for line in report.splitlines() if "never graded" in line)
    assert all(line.count(f"({name}: ") == 1 for name in NEVER_GRADED), line
    report, dest = export("moodle")
    emails = {row[0] for row in csv.reader(io.StringIO(dest.read_text()))}
    assert not emails & {f"{n}@uni.edu" for n in NEVER_GRADED} and "alice@uni.edu" in emails
    report, dest = export("csv")
    rows = {r["submission"]: r for r in csv.DictReader(io.StringIO(dest.read_text())) if r["submission"]}
    assert all(rows[n]["final_score"] == "" and rows[n]["status"] == "not_graded" for n in NEVER_GRADED)
    report, dest = export("canvas", "--ungraded", "zero")  # the control: zeros only when asked for
    assert all(canvas(dest)[n.title()] == "0" for n in NEVER_GRADED)

    # a person decides: frank e-mailed the right zip on time; quinn is excused
    for args in (("frank", "--score", "70", "--reason", "graded the zip he e-mailed before the deadline"),
                 ("quinn", "--excuse", "--reason", "medical certificate")):
        made = run_grade("decide", *args, "--results", str(out), timeout=300)
        assert made.returncode == 0, made.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(e["submission"] for e in summary["decided"]) == ["frank", "quinn"]
    assert "frank" not in [e["submission"] for e in summary["needs_person"]]
    report, dest = export("canvas")
    assert canvas(dest)["Frank"] == "70" and canvas(dest)["Quinn"] == "EX" and canvas(dest)["Nina"] == ""
    # a --force regrade keeps the decisions
    again = run_grade("autograde", str(base / "subs"), str(base / "late_empty"), "--out", str(out), "--roster",
                      str(graded["roster"]), "--force", "--jobs", "2", timeout=3600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "decided by a person: 2 (frank, quinn)" in again.stdout
    report, dest = export("canvas")
    assert canvas(dest)["Frank"] == "70" and canvas(dest)["Quinn"] == "EX"


def test_lti_push_posts_nothing_the_kit_never_graded(graded):
    pytest.importorskip("pylti1p3", reason="pip install -e '.[lti]'")
    pytest.importorskip("lti1p3platform", reason="pip install -e '.[test]'")
    from tests.support.lti_fixture import class_members, start, stop  # noqa: PLC0415 - the lti extra

    base, out, names = graded["base"], graded["out"], graded["names"]
    lti = base / "lti"
    lti.mkdir(exist_ok=True)
    lms = start(lti, class_members(names))
    try:
        assert lms.launch("u-teacher").status_code == 200
        pushed = run_grade("lti", "push", str(out), "--lms-course", "ATT101", "--store", str(lms.store_dir),
                           timeout=600)
        assert pushed.returncode == 0, pushed.stderr
        (item,) = lms.platform.book.lineitems
        column = {user.split("-", 2)[-1] for user in lms.platform.book.column(item)}
        decided = {p.parent.name for p in out.glob("*/decision.json")}
        excused = {n for n in decided if '"excused": true' in (out / n / "decision.json").read_text()}
        assert column == set(names) - (NEVER_GRADED - decided) - excused
        line = next(line for line in pushed.stderr.splitlines() if "never graded by the kit" in line)
        for name in NEVER_GRADED - decided:
            assert line.count(f"{name} ({name.title()}): ") == 1, (name, line)
        for request in lms.platform.book.scores():
            assert request["body"]["scoreGiven"] > 0 or not request["body"]["userId"].endswith(tuple(NEVER_GRADED))
    finally:
        stop(lms)
