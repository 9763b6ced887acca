"""No invented grades, and a person's decision kept: a hand-in the kit never graded is blank in every export format
and posts nothing through LTI, named in both reports; ``--ungraded zero`` is the explicit way to give its zero; a
score or an excuse recorded with ``grade decide`` is what export and LTI use instead, and a regrade keeps it.

(tests/system/test_deadline_day_hand_ins.py does the same on a class graded through the command line.)"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from autograder.export import ungraded
from autograder.grading.suites import problems
from autograder.outputs import decision
from autograder.outputs.results import parse

from .conftest import run_grade
from .test_export import COURSE, ROSTER

NOT_GRADED = problems.not_graded("corrupt", "frank.zip is not a valid .zip archive")
BROKEN_MODULE = [{"kind": "module_not_graded", "cause": "not_utf8", "module": "simple_attention",
                  "steps": ["simple_attention.attention_scores"], "message": "not UTF-8"}]
MISSING_MODULE = [{"kind": "module_not_graded", "cause": "missing", "module": "simple_attention",
                   "steps": ["simple_attention.attention_scores"], "message": "missing"}]


def results_json(score: float, when: str | None = "2025-03-14T20:00:00+01:00", found=(), digest="h1") -> str:
    data = {"score": score, "tests": [{"name": "simple_attention.attention_scores values: x", "score": 0,
                                       "max_score": 4.0},
                                      {"name": "simple_attention.attention_scores gradients: x", "score": 0,
                                       "max_score": 6.0}],
            "extra_data": {"submission": "x", "submitted_at": when, "problems": list(found), "submission_hash": digest}}
    return json.dumps(data)


@pytest.fixture
def graded(tmp_path) -> Path:
    """alice graded; frank a corrupt zip; dave a module not read (not UTF-8); erin a module not handed in (graded:
    zero for it); carol graded late."""
    folders = {"alice": results_json(10), "frank": results_json(0, found=NOT_GRADED),
               "dave": results_json(4, found=BROKEN_MODULE), "erin": results_json(4, found=MISSING_MODULE),
               "carol": results_json(6, "2025-03-16T11:59:00+01:00")}
    for name, text in folders.items():
        (tmp_path / "results" / name).mkdir(parents=True)
        (tmp_path / "results" / name / "results.json").write_text(text)
    (tmp_path / "roster.csv").write_text(ROSTER)
    (tmp_path / "course.yml").write_text(COURSE)
    return tmp_path


def export(tmp: Path, fmt: str, *extra: str):
    out = tmp / f"grades-{fmt}.csv"
    run = run_grade("export", "--results", str(tmp / "results"), "--roster", str(tmp / "roster.csv"), "--format", fmt,
                    "--out", str(out), "--course", str(tmp / "course.yml"), *extra, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stderr, out.read_text(encoding="utf-8")


def canvas_cells(text: str) -> dict[str, str]:
    rows = list(csv.reader(io.StringIO(text)))[2:]
    return {row[0]: row[-1] for row in rows}


def decide(tmp: Path, name: str, *args: str):
    return run_grade("decide", name, "--results", str(tmp / "results"), "--course", str(tmp / "course.yml"), *args,
                     timeout=120)


@pytest.mark.unit
def test_what_counts_as_never_graded():
    assert ungraded.reasons(parse(json.loads(results_json(0, found=NOT_GRADED)))) == ["not graded: corrupt zip"]
    assert ungraded.reasons(parse(json.loads(results_json(4, found=BROKEN_MODULE)))) == \
        ["simple_attention not graded: not UTF-8"]
    graded_with_errors = json.loads(results_json(8))
    graded_with_errors["extra_data"]["grader_errors"] = 2
    assert "grader itself" in ungraded.reasons(parse(graded_with_errors))[0]
    # controls: a module not handed in is graded (zero for it), and so is a clean hand-in
    assert ungraded.reasons(parse(json.loads(results_json(4, found=MISSING_MODULE)))) == []
    assert ungraded.reasons(parse(json.loads(results_json(10)))) == []


def test_never_graded_is_blank_in_every_format_and_named(graded):
    report, text = export(graded, "canvas")
    cells = canvas_cells(text)
    assert cells["Fox, Frank"] == "" and cells["Dunn, Dave"] == ""  # never graded: blank
    assert cells["Able, Alice"] == "10" and cells["Eddy, Erin"] == "4"  # the controls: graded, and graded without
    assert cells["Cole, Carol"] == "4.8"                                 # a module handed in (zero for it)
    line = next(line for line in report.splitlines() if "never graded" in line)
    assert "2 hand-in(s)" in line and "Fox, Frank (frank) (frank: not graded: corrupt zip)" in line
    assert "Dunn, Dave (dave) (dave: simple_attention not graded: not UTF-8)" in line and "grade decide" in line
    report, text = export(graded, "moodle")
    emails = [row[0].lower() for row in csv.reader(io.StringIO(text))][1:]
    assert "frank@uni.edu" not in emails and "dave@uni.edu" not in emails and "alice@uni.edu" in emails
    assert any("never graded, left out of the Moodle file" in line for line in report.splitlines())
    report, text = export(graded, "csv")
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    assert (rows["Fox, Frank"]["final_score"], rows["Fox, Frank"]["status"]) == ("", "not_graded")
    assert rows["Fox, Frank"]["note"] == "not graded: corrupt zip"
    # the explicit way to give the kit's zero: --ungraded zero
    report, text = export(graded, "canvas", "--ungraded", "zero")
    cells = canvas_cells(text)
    assert cells["Fox, Frank"] == "0" and cells["Dunn, Dave"] == "4"
    assert any("given the kit's score in the Canvas file (--ungraded zero)" in line for line in report.splitlines())


def test_a_recorded_decision_is_exported_and_kept(graded):
    refused = decide(graded, "frank", "--score", "7")
    assert refused.returncode == 2 and "--reason" in refused.stderr  # a decision says why
    assert decide(graded, "frank", "--score", "11", "--reason", "x").returncode == 2  # above course.yml's 10 points
    made = decide(graded, "frank", "--score", "7", "--reason", "graded the copy e-mailed before the deadline")
    assert made.returncode == 0, made.stderr
    kept = decision.read(graded / "results" / "frank")
    assert (kept.score, kept.excused, kept.submission_hash) == (7.0, False, "h1")
    assert decide(graded, "dave", "--excuse", "--reason", "medical certificate").returncode == 0
    assert decide(graded, "zed", "--excuse", "--reason", "joined late").returncode == 0  # no hand-in at all
    report, text = export(graded, "canvas")
    cells = canvas_cells(text)
    assert cells["Fox, Frank"] == "7" and cells["Dunn, Dave"] == "EX" and cells["Zane, Zed"] == "EX"
    assert "decided: Fox, Frank (frank): 7/10 recorded by a person (graded the copy e-mailed" in report
    assert not any("never graded" in line for line in report.splitlines())  # decided: nothing left to name
    report, text = export(graded, "moodle")
    assert "frank@uni.edu,\"Fox, Frank\",7" in text.replace("\r\n", "\n") and "dave@uni.edu" not in text
    assert any("excused by a person, left out of the Moodle file" in line for line in report.splitlines())
    report, text = export(graded, "csv")
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    assert rows["Fox, Frank"]["final_score"] == "7" and rows["Fox, Frank"]["note"].startswith("7 recorded by a person")
    assert (rows["Dunn, Dave"]["status"], rows["Dunn, Dave"]["final_score"]) == ("excused", "")
    # a regrade writes results.json again and leaves the decision be; a different hand-in is said to have changed
    (graded / "results" / "frank" / "results.json").write_text(results_json(0, found=NOT_GRADED, digest="h2"))
    report, text = export(graded, "canvas")
    assert canvas_cells(text)["Fox, Frank"] == "7"
    assert any("recorded for an earlier hand-in" in line and "Fox, Frank" in line for line in report.splitlines())
    # --clear: the kit's result counts again (the control: blank once more)
    assert decide(graded, "frank", "--clear").returncode == 0
    assert canvas_cells(export(graded, "canvas")[1])["Fox, Frank"] == ""


@pytest.mark.unit
def test_the_class_list_shows_a_decision_apart_from_who_needs_a_person():
    from autograder.autograde import summary  # noqa: PLC0415 - the summary, as grade autograde and grade decide write it
    from autograder.course import load_course  # noqa: PLC0415 - the kit's course

    from .conftest import ROOT  # noqa: PLC0415 - the kit's course

    course = load_course(ROOT / "course.yml")
    results = {"frank": {"score": 0, "extra_data": {"problems": NOT_GRADED}},
               "eve": {"score": 0, "extra_data": {"problems": problems.not_graded("empty_folder", "eve/: empty")}}}
    made = decision.Decision(70.0, False, "the e-mailed copy", submission_hash=None)
    built = summary.build(course, results, decisions={"frank": made})
    assert [e["submission"] for e in built["needs_person"]] == ["eve"]
    assert [(e["submission"], e["decision"]) for e in built["decided"]] == [
        ("frank", "70/81 recorded by a person (the e-mailed copy)")]
    md = summary.as_markdown(built)
    assert "### Decided by a person (1)" in md and "**frank**: 70/81 recorded by a person" in md
    assert "(the kit: corrupt zip" in md
    lines = summary.terminal_lines(built, Path("results"))
    assert lines[0] == "decided by a person: 1 (frank)" and lines[1].startswith("needs a person: 1")
    # the control: without the decision, frank needs a person like eve
    assert len(summary.build(course, results)["needs_person"]) == 2


# -- LTI: nothing posted that the kit never graded -----------------------------------------------------------
def test_lti_push_posts_no_invented_grade_and_posts_a_decision(tmp_path):
    pytest.importorskip("pylti1p3", reason="pip install -e '.[lti]'")
    pytest.importorskip("lti1p3platform", reason="pip install -e '.[test]'")
    from tests.support.lti_fixture import COURSE_YML, class_members, start, stop  # noqa: PLC0415 - the lti extra

    lms = start(tmp_path, class_members(["alice", "frank", "dave", "erin"]))
    try:
        (tmp_path / "course.yml").write_text(COURSE_YML)
        for name, text in {"alice": results_json(10), "frank": results_json(0, found=NOT_GRADED),
                           "dave": results_json(4, found=BROKEN_MODULE),
                           "erin": results_json(0, found=NOT_GRADED)}.items():
            (tmp_path / "results" / name).mkdir(parents=True)
            (tmp_path / "results" / name / "results.json").write_text(text)
        assert lms.launch("u-teacher").status_code == 200

        def push(*extra):
            return run_grade("lti", "push", str(tmp_path / "results"), "--lms-course", "ATT101", "--store",
                             str(lms.store_dir), "--course", str(tmp_path / "course.yml"), *extra, timeout=300)

        decided = decide(tmp_path, "erin", "--score", "6", "--reason", "the e-mailed copy")
        assert decided.returncode == 0, decided.stderr
        first = push()
        assert first.returncode == 0, first.stderr
        assert "posted 2, unchanged 0, unmatched 0, refused 0" in first.stderr
        (item,) = lms.platform.book.lineitems
        column = {user.split("-")[-1]: score for user, score in lms.platform.book.column(item).items()}
        assert column == {"alice": 10, "erin": 6}  # frank and dave: never graded, nothing posted
        line = next(line for line in first.stderr.splitlines() if "never graded by the kit" in line)
        assert "frank (Frank): not graded: corrupt zip" in line and "dave (Dave): simple_attention not graded" in line
        assert "a person's decision posted in the kit's place: erin (Erin): 6/10 recorded by a person" in first.stderr
        erin = next(r["body"] for r in lms.platform.book.scores() if r["body"]["userId"].endswith("erin"))
        assert erin["comment"] == "attention autograder: 6/10 points, recorded by your instructor"
        # the old name of the option: --course is course.yml in every verb, said in one line
        old = run_grade("lti", "push", str(tmp_path / "results"), "--lms-course", "ATT101", "--store",
                        str(lms.store_dir), "--course", "ATT101", timeout=120)
        assert old.returncode == 2 and "the LMS course is --lms-course ATT101" in old.stderr
        # the explicit way to post the kit's zeros: --ungraded zero (the control)
        zeros = push("--ungraded", "zero")
        assert zeros.returncode == 0, zeros.stderr
        assert "posted 2, unchanged 2, unmatched 0, refused 0" in zeros.stderr
        column = {user.split("-")[-1]: score for user, score in lms.platform.book.column(item).items()}
        assert column == {"alice": 10, "erin": 6, "frank": 0, "dave": 4}
    finally:
        stop(lms)
