"""Deadline day, replayed: a class of 30 mixed submissions graded with --jobs 2, Ctrl-C half way, the same
command again (it resumes: each submission graded exactly once), a --force regrade, and the gradebook export.
(tests/integration/test_deadline_day.py holds the deadline-day issue's smaller items.)

Its cost: the 30 submissions are graded twice (half, then the rest after the interrupt, then all again with
--force), which is what it shows; one test, so nothing to share. The course is a copy with a 6 s step limit
(tests/support/short_course.py): the infinite loop and the print loop each spin a core until their step's limit.

The class is what a real deadline brings: folders (some nested in a folder two deep), .zip archives (some
with a top folder), one notebook per module, one notebook for all, the test corpus's correct and buggy
submissions, a corrupt zip, an empty folder, a module that is not UTF-8, a print loop, an infinite loop, a
submission that hangs then exits; hand-in times from the LMS (--times): on time, within the grace period,
late, and a few the LMS has none for.
"""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import time
from pathlib import Path

import pytest

from autograder.pages import class_list

from .conftest import ROOT, run_grade
from tests.support.submission_forms import module_notebooks, one_notebook, zipped
from .test_interrupt import MESSAGE, Batch, graded_lines, snapshot

CORPUS = ROOT / "tests" / "corpus" / "submissions"
ADVERSARIAL = ROOT / "tests" / "corpus" / "adversarial"
SAMPLES = ROOT / "samples" / "submissions"
SIZE = 30
ON_TIME, IN_GRACE, LATE = "2026-12-11T21:30:00+01:00", "2026-12-12T00:05:00+01:00", "2026-12-13T11:59:00+01:00"


def _corpus_part(n: int) -> list[Path]:
    """``n`` of the corpus's submissions, in name order: half of them correct (correct_einsum among them), half bugs,
    each half the first in name order."""
    every = sorted(p for p in CORPUS.iterdir() if p.is_dir())
    correct = [p for p in every if p.name.startswith("correct_") and p.name != "correct_einsum"][:n // 2 - 1]
    bugs = [p for p in every if not p.name.startswith("correct_")][:n - n // 2]
    return sorted([CORPUS / "correct_einsum", *correct, *bugs])


def build_class(subs: Path) -> dict[str, str]:
    """The 30 submissions, in every form (each of the corpus's forms once, the samples' in each); {name: its form}."""
    subs.mkdir()
    forms: dict[str, str] = {}

    def folder(name: str, source: Path, nested: str = "") -> None:
        shutil.copytree(source, subs / name / nested if nested else subs / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
        forms[name] = "nested folder" if nested else "folder"

    for i, source in enumerate(_corpus_part(12)):  # i % 12: each form, with and without its variant
        name = source.name
        if i % 6 == 0:
            zipped(source, subs / f"{name}.zip", prefix="attention/" if i % 12 == 0 else "")
            forms[name] = "zip"
        elif i % 6 == 3:
            one_notebook(source, subs, headings=i % 12 == 3, name=f"{name}.ipynb")
            forms[name] = "one notebook"
        elif i % 6 == 5:
            module_notebooks(source, subs / name)
            forms[name] = "notebooks"
        else:
            folder(name, source)
    for sample in ("alice", "bob", "carol", "dave"):  # 4 + 9
        folder(sample, SAMPLES / sample)
    zipped(SAMPLES / "alice", subs / "alice_zip.zip")
    zipped(SAMPLES / "bob", subs / "bob_zip.zip", prefix="handin/")
    zipped(SAMPLES / "alice", subs / "alice_deep.zip", prefix="submission/attention/")
    forms.update(alice_zip="zip", bob_zip="zip", alice_deep="zip")
    module_notebooks(SAMPLES / "carol", subs / "carol_nb")
    module_notebooks(SAMPLES / "dave", subs / "dave_nb")
    forms.update(carol_nb="notebooks", dave_nb="notebooks")
    one_notebook(SAMPLES / "alice", subs, headings=False, name="alice_one.ipynb")
    one_notebook(SAMPLES / "bob", subs, name="bob_one.ipynb")
    forms.update(alice_one="one notebook", bob_one="one notebook")
    folder("carol_nested", SAMPLES / "carol", nested="handin/attention")
    folder("dave_nested", SAMPLES / "dave", nested="attention")
    # what goes wrong on a deadline day: 6
    (subs / "frank.zip").write_bytes(b"PK\x03\x04 the upload stopped half way " * 20)
    forms["frank"] = "corrupt zip"
    (subs / "eve").mkdir()
    forms["eve"] = "empty folder"
    for name in ("non_utf8_module", "output_flood", "infinite_loop"):
        folder(name, ADVERSARIAL / name)
    forms.update(non_utf8_module="not UTF-8", output_flood="print loop", infinite_loop="infinite loop")
    assert len(forms) == SIZE and sorted(forms) == sorted(p.name.removesuffix(".zip").removesuffix(".ipynb")
                                                          for p in subs.iterdir())
    return forms


def hand_in_times(names: list[str]) -> dict[str, str | None]:
    """As the LMS recorded them: mostly on time, some within the grace period, some late, a few unknown."""
    times = {}
    for i, name in enumerate(names):
        times[name] = None if i % 15 == 14 else LATE if i % 7 == 6 else IN_GRACE if i % 10 == 9 else ON_TIME
    return times


def scores(out: Path) -> dict[str, float]:
    return {p.parent.name: json.loads(p.read_text(encoding="utf-8"))["score"] for p in out.glob("*/results.json")}


def needs_a_person(out: Path) -> None:
    """The dashboard's "needs a person" list names each submission that needs one, with its reason, in
    summary.json, summary.md and summary.html alike."""
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    listed = {class_list.who(e): {(r["category"], r["why"]) for r in e["reasons"]} for e in summary["needs_person"]}
    assert ("not_graded", "corrupt zip") in listed["frank"], listed.get("frank")
    assert ("not_graded", "empty folder") in listed["eve"], listed.get("eve")
    assert any(cat == "module_not_graded" and "UTF-8" in why for cat, why in listed["non_utf8_module"])
    assert any(cat in ("limit", "timed_out") for cat, _ in listed["output_flood"])
    assert any(cat == "timed_out" for cat, _ in listed["infinite_loop"])
    page = (out / "summary.html").read_text(encoding="utf-8")
    markdown = (out / "summary.md").read_text(encoding="utf-8")
    for name in ("frank", "eve", "non_utf8_module", "output_flood", "infinite_loop"):
        assert name in page and name in markdown, name
    assert "Needs a person" in page and "Needs a person" in markdown


def test_deadline_day(tmp_path, scratch_dir, short_course_file):
    subs = tmp_path / "subs"
    forms = build_class(subs)
    names = sorted(forms)
    times = hand_in_times(names)
    times_file = tmp_path / "times.csv"
    times_file.write_text("submission,submitted_at\n" + "".join(f"{n},{t}\n" for n, t in times.items() if t))

    # -- 1. grading starts; Ctrl-C half way --------------------------------------------------------
    # the course with a 6 s step limit: the infinite and print loops spin 6 s a step, not 20
    batch = Batch(tmp_path, subs, "--jobs", "2", "--times", str(times_file), "--course", str(short_course_file),
                  scratch=scratch_dir)
    try:
        batch.wait_for_results(at_least=SIZE // 2, timeout=1800)
        batch.interrupt("group")
        seconds = batch.wait(timeout=120)
    finally:
        batch.kill()
    log = batch.log()
    assert batch.process.returncode == 130, log
    assert seconds < 15, f"{seconds:.1f} s from Ctrl-C to exit"
    assert batch.left() == [], "processes of the interrupted batch still running"
    assert "Traceback" not in log and "Aborted!" not in log, log
    first = snapshot(batch.out)
    assert SIZE // 2 <= len(first) < SIZE, len(first)
    said = MESSAGE.search(log)
    assert said and int(said.group(2)) == SIZE, log
    assert set(graded_lines(log)) <= set(first)  # nothing reported graded that has no results.json
    summary = json.loads((batch.out / "summary.json").read_text())
    assert summary["submissions"] == len(first)

    # -- 2. the same command again: it grades the rest, each submission exactly once ---------------
    rerun = run_grade(*batch.command[3:], env={"TMPDIR": str(batch.scratch)}, timeout=1800)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{len(first)} submission(s) already graded with the same inputs: skipped" in rerun.stdout
    rest = graded_lines(rerun.stdout)
    assert rest == set(names) - set(first)  # nothing lost, nothing graded twice
    resumed = snapshot(batch.out)
    assert sorted(resumed) == names
    assert all(resumed[name] == first[name] for name in first), "a finished submission was graded again"
    summary = json.loads((batch.out / "summary.json").read_text())
    assert summary["submissions"] == SIZE
    graded = scores(batch.out)

    # every form and every mishap has its results.json, with what a person needs to read
    for name in names:
        result = json.loads((batch.out / name / "results.json").read_text(encoding="utf-8"))
        assert result["extra_data"]["submission"] == name
        assert result["extra_data"]["submitted_at"] == times[name], name
        assert (batch.out / name / "feedback.html").is_file(), name
    for good in ("alice", "alice_zip", "alice_deep", "alice_one", "correct_einsum"):
        assert graded[good] == summary["max_score"], (good, forms[good])
    assert graded["carol_nb"] == graded["carol"] == graded["carol_nested"]
    assert graded["bob_zip"] == graded["bob"] == graded["bob_one"]
    assert graded["dave_nb"] == graded["dave_nested"] == graded["dave"] == 0
    for mishap in ("frank", "eve"):
        assert graded[mishap] == 0, mishap
    assert re.search(r"corrupt|not a valid", (batch.out / "frank" / "results.json").read_text(), re.I)
    for loser in ("non_utf8_module", "output_flood", "infinite_loop"):
        assert 0 <= graded[loser] < summary["max_score"], loser
    needs_a_person(batch.out)

    # -- 3. --force: everything graded again, to the same grades -----------------------------------
    before = snapshot(batch.out)
    time.sleep(0.01)
    forced = run_grade(*batch.command[3:], "--force", env={"TMPDIR": str(batch.scratch)}, timeout=1800)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert graded_lines(forced.stdout) == set(names)
    after = snapshot(batch.out)
    assert all(after[name][0] != before[name][0] for name in names), "--force left a results.json as it was"
    assert scores(batch.out) == graded
    summary = json.loads((batch.out / "summary.json").read_text())
    assert summary["submissions"] == SIZE and summary["regraded"] == SIZE and summary["changes"] == []
    needs_a_person(batch.out)

    # -- 4. the gradebook, with the roster ------------------------------------------------------------
    roster = tmp_path / "roster.csv"
    roster.write_text("name,email,login,sis_id,section\n"
                      + "".join(f'"Student, {n}",{n}@uni.edu,{n},S{i:03d},A\n' for i, n in enumerate(names))
                      + '"Absent, Alex",alex@uni.edu,alex,S999,B\n')
    grades = tmp_path / "grades.csv"
    exported = run_grade("export", "--results", str(batch.out), "--roster", str(roster), "--format", "csv",
                         "--out", str(grades))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(grades.read_text()))}
    assert len(rows) == SIZE + 1
    assert rows["Absent, Alex"]["status"] == "no_submission" and rows["Absent, Alex"]["final_score"] == ""
    never_graded = {"frank", "eve", "non_utf8_module"}  # a corrupt zip, an empty folder, a module not read
    for name in never_graded:  # no grade the kit never gave: blank, named in the report
        row = rows[f"Student, {name}"]
        assert (row["submission"], row["raw_score"], row["final_score"], row["status"]) == (name, "", "", "not_graded")
        assert any(name in line and "never graded" in line for line in exported.stderr.splitlines()), name
    for name in names:
        if name in never_graded:
            continue
        row = rows[f"Student, {name}"]
        assert row["submission"] == name
        assert float(row["raw_score"]) == pytest.approx(graded[name])
        expected = {ON_TIME: ("on_time", 0), IN_GRACE: ("in_grace", 0), LATE: ("late", 20), None: ("undated", 0)}
        status, penalty = expected[times[name]]
        assert row["status"] == status, (name, row)
        assert float(row["penalty_percent"] or 0) == penalty, (name, row)
        assert float(row["final_score"]) == pytest.approx(graded[name] * (100 - penalty) / 100, abs=0.01), (name, row)
