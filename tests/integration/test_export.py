"""grade export: results.json files + roster + late policy -> Canvas, Moodle or plain CSV gradebook files."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from datetime import datetime, timedelta

import pytest

from autograder.course.schema import LatePolicy
from autograder.export.late_policy import IN_GRACE, LATE, ON_TIME, UNDATED, assess

from .conftest import ROOT, run_grade

COURSE = """\
unit: attention
title: Attention unit
late_policy:
  due: 2025-03-14T23:59:00+01:00
  grace_minutes: 15
  penalty_per_day: 10
  max_penalty: 50
steps:
  simple_attention.attention_scores:
    title: Attention scores
    counts: {values: 4, gradients: 6}
"""

ROSTER = """\
name,email,login,sis_id,section
"Able, Alice",Alice@uni.edu,,S001,A
"Bee, Bob",bob@uni.edu,bob,S002,A
"Cole, Carol",carol.cole@uni.edu,carol,S003,B
"Dunn, Dave",dave@uni.edu,dave,S004,B
"Eddy, Erin",erin@uni.edu,erin,S005,B
"Fox, Frank",frank@uni.edu,frank,S006,A
"Zane, Zed",zed@uni.edu,zed,S007,A
"""

ASSIGNMENT = "Attention unit"


def results_json(score: float, submitted_at: str | None, *, dated: bool = True) -> str:
    data = {"score": score, "output": "", "visibility": "visible", "stdout_visibility": "hidden",
            "tests": [{"name": "simple_attention.attention_scores values: Attention scores", "score": 0,
                       "max_score": 4.0, "status": "failed"},
                      {"name": "simple_attention.attention_scores gradients: Attention scores", "score": 0,
                       "max_score": 6.0, "status": "failed"}]}
    if dated:
        data["extra_data"] = {"submission": "x", "submitted_at": submitted_at}
    return json.dumps(data)


@pytest.fixture
def setup(tmp_path):
    """A results folder by hand: on time, within grace, 1.5 days late, very late, undated, unknown, unreadable."""
    results = tmp_path / "results"
    folders = {
        "alice": results_json(10, "2025-03-14T20:00:00+01:00"),      # on time; matched by e-mail local part
        "BOB": results_json(8, "2025-03-14T23:10:00Z"),              # 00:10 local: within the 15 min grace
        "carol": results_json(6, "2025-03-16T11:59:00+01:00"),       # 1.5 days late: 2 started days, -20%
        "dave": results_json(9, "2025-03-24T23:59:00+01:00"),        # 10 days late: capped at -50%
        "erin": results_json(7.5, None, dated=False),                # older results.json: undated
        "mallory": results_json(10, "2025-03-14T20:00:00+01:00"),    # not on the roster
        "zed": "{not json",                                          # unreadable
    }
    for name, text in folders.items():
        (results / name).mkdir(parents=True)
        (results / name / "results.json").write_text(text)
    (tmp_path / "roster.csv").write_text(ROSTER)
    (tmp_path / "course.yml").write_text(COURSE)
    return tmp_path


def export(tmp, fmt, *extra, roster="roster.csv", course="course.yml"):
    out = tmp / f"grades-{fmt}.csv"
    result = run_grade("export", "--results", str(tmp / "results"), "--roster", str(tmp / roster),
                       "--format", fmt, "--out", str(out), "--course", str(tmp / course), *extra, timeout=120)
    text = out.read_bytes().decode("utf-8") if out.exists() else None
    return result, text


def assert_report_names_the_problems(stderr: str, missing_phrase: str):
    lines = stderr.splitlines()
    missing = next(line for line in lines if "without a submission" in line)
    assert "Fox, Frank (frank)" in missing and missing_phrase in missing
    unknown = next(line for line in lines if "match no roster student" in line)
    assert "mallory" in unknown and "not in the export" in unknown
    unreadable = next(line for line in lines if "unreadable" in line and "zed" in line)
    assert "not valid JSON" in unreadable and "Zane, Zed" in unreadable
    undated = next(line for line in lines if "undated" in line and "counted on time" in line)
    assert "Eddy, Erin" in undated
    assert any("Cole, Carol" in line and "2 day(s) late" in line and "-20%" in line and "6 -> 4.8" in line
               for line in lines)
    assert any("Dunn, Dave" in line and "-50%" in line and "9 -> 4.5" in line for line in lines)


def test_canvas_gradebook_file(setup):
    result, text = export(setup, "canvas")
    assert result.returncode == 0, result.stderr
    assert text == "\r\n".join([
        f"Student,ID,SIS User ID,SIS Login ID,Section,{ASSIGNMENT}",
        "    Points Possible,,,,,10",
        '"Able, Alice",,S001,,A,10',
        '"Bee, Bob",,S002,bob,A,8',
        '"Cole, Carol",,S003,carol,B,4.8',
        '"Dunn, Dave",,S004,dave,B,4.5',
        '"Eddy, Erin",,S005,erin,B,7.5',
        '"Fox, Frank",,S006,frank,A,',          # no submission: blank, nothing overwritten
        '"Zane, Zed",,S007,zed,A,',             # unreadable results.json: blank
    ]) + "\r\n"
    assert "mallory" not in text
    assert_report_names_the_problems(result.stderr, "left blank in the Canvas file")


def test_canvas_file_parses_as_canvas_importer_expects(setup):
    """Header: Student, ID, then SIS columns, then Section; a Points Possible row; numeric or blank cells."""
    _, text = export(setup, "canvas", "--assignment", "Unit 3: attention (4711)", "--points", "100")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Unit 3: attention (4711)"]
    assert "Points Possible" in rows[1][0] and rows[1][5] == "100"
    assert all(len(r) == 6 for r in rows)
    scores = {r[0]: r[5] for r in rows[2:]}
    assert scores == {"Able, Alice": "100", "Bee, Bob": "80", "Cole, Carol": "48", "Dunn, Dave": "45",
                      "Eddy, Erin": "75", "Fox, Frank": "", "Zane, Zed": ""}


def test_moodle_grade_import_file(setup):
    result, text = export(setup, "moodle")
    assert result.returncode == 0, result.stderr
    assert text == "\r\n".join([
        f"Email address,Full name,{ASSIGNMENT}",
        'Alice@uni.edu,"Able, Alice",10',      # e-mail as the roster spells it: Moodle matches it exactly
        'bob@uni.edu,"Bee, Bob",8',
        'carol.cole@uni.edu,"Cole, Carol",4.8',
        'dave@uni.edu,"Dunn, Dave",4.5',
        'erin@uni.edu,"Eddy, Erin",7.5',
    ]) + "\r\n"                               # frank and zed left out: a blank would erase a grade
    assert_report_names_the_problems(result.stderr, "left out of the Moodle file")


def test_moodle_by_id_number_with_zero_for_missing(setup):
    result, text = export(setup, "moodle", "--moodle-user", "idnumber", "--missing", "zero")
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["ID number", "Full name", ASSIGNMENT]
    assert rows[1:] == [["S001", "Able, Alice", "10"], ["S002", "Bee, Bob", "8"], ["S003", "Cole, Carol", "4.8"],
                        ["S004", "Dunn, Dave", "4.5"], ["S005", "Eddy, Erin", "7.5"], ["S006", "Fox, Frank", "0"]]
    assert "given 0 in the Moodle file" in result.stderr


def test_plain_csv_shows_the_arithmetic(setup):
    result, text = export(setup, "csv")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    assert list(next(csv.reader(io.StringIO(text)))) == [
        "student_id", "name", "email", "section", "submission", "submitted_at", "raw_score", "max_score",
        "late_days", "penalty_percent", "final_score", "status", "note"]
    got = {name: (r["submission"], r["raw_score"], r["max_score"], r["late_days"], r["penalty_percent"],
                  r["final_score"], r["status"]) for name, r in rows.items()}
    assert got == {
        "Able, Alice": ("alice", "10", "10", "0", "0", "10", ON_TIME),
        "Bee, Bob": ("BOB", "8", "10", "0", "0", "8", IN_GRACE),
        "Cole, Carol": ("carol", "6", "10", "2", "20", "4.8", LATE),
        "Dunn, Dave": ("dave", "9", "10", "10", "50", "4.5", LATE),
        "Eddy, Erin": ("erin", "7.5", "10", "", "0", "7.5", UNDATED),
        "Fox, Frank": ("", "", "10", "", "", "", "no_submission"),
        "Zane, Zed": ("zed", "", "10", "", "", "", "unreadable"),
    }
    assert rows["Able, Alice"]["student_id"] == "S001"
    assert rows["Cole, Carol"]["submitted_at"] == "2025-03-16T11:59:00+01:00"
    assert_report_names_the_problems(result.stderr, "empty final_score")


def test_without_a_late_policy_scores_are_exported_as_they_are(setup):
    (setup / "plain.yml").write_text(COURSE.split("late_policy:")[0] + COURSE.split("max_penalty: 50\n")[1])
    result, text = export(setup, "csv", course="plain.yml")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    assert rows["Dunn, Dave"]["final_score"] == "9" and rows["Dunn, Dave"]["status"] == "submitted"
    assert "no late_policy" in result.stderr


def test_a_canvas_gradebook_export_serves_as_roster(setup):
    (setup / "canvas_roster.csv").write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (11),Current Score\n"
        "    Points Possible,,,,,5,(read only)\n"
        '"Able, Alice",101,S001,alice,A,5,100\n'
        '"Bee, Bob",102,S002,bob,A,4,80\n'
        '"Student, Test",999,,,A,,\n')
    result, text = export(setup, "canvas", roster="canvas_roster.csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[2:] == [["Able, Alice", "101", "S001", "alice", "A", "10"],
                        ["Bee, Bob", "102", "S002", "bob", "A", "8"]]
    assert "Test" not in result.stderr
    unknown = next(line for line in result.stderr.splitlines() if "match no roster student" in line)
    assert all(name in unknown for name in ("carol", "dave", "erin", "mallory", "zed"))


def test_two_submissions_of_one_student_keep_the_latest(setup):
    (setup / "results" / "bob@uni.edu").mkdir()
    (setup / "results" / "bob@uni.edu" / "results.json").write_text(results_json(9.5, "2025-03-14T22:00:00+01:00"))
    result, text = export(setup, "canvas")
    assert '"Bee, Bob",,S002,bob,A,8' in text.splitlines()     # BOB (23:10Z) is later than 22:00+01:00
    assert "Bee, Bob (bob) has 2 submissions (bob@uni.edu, BOB); exported BOB, the latest" in result.stderr


def test_nothing_matched_writes_nothing_and_fails(setup):
    (setup / "other.csv").write_text("name,login\nSomeone,someone\n")
    result, text = export(setup, "canvas", roster="other.csv")
    assert result.returncode == 1
    assert text is None
    assert "no submission" in result.stderr and "matches a student" in result.stderr


def test_roster_without_identifying_column_is_refused(setup):
    (setup / "names.csv").write_text("name,section\nAlice,A\n")
    result, text = export(setup, "canvas", roster="names.csv")
    assert result.returncode == 2 and text is None
    assert "names.csv, line 1: no column identifies students" in result.stderr


def test_standard_output_when_no_out_and_no_torch(setup):
    code = ("import sys\nfrom autograder.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "assert 'torch' not in sys.modules, 'grade export imported torch'\n")
    result = subprocess.run([sys.executable, "-c", code, "export", "--results", str(setup / "results"), "--roster",
                             str(setup / "roster.csv"), "--format", "moodle", "--course", str(setup / "course.yml")],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Email address,Full name,Attention unit")


POLICY = LatePolicy(due=datetime.fromisoformat("2025-03-14T23:59:00+01:00"), grace_minutes=15,
                    penalty_per_day=10, max_penalty=35)


@pytest.mark.parametrize("after_due, status, days, penalty", [
    (timedelta(0), ON_TIME, 0, 0),
    (timedelta(minutes=15), IN_GRACE, 0, 0),
    (timedelta(minutes=15, seconds=1), LATE, 1, 0.10),        # a started day counts in full
    (timedelta(days=1, minutes=15), LATE, 1, 0.10),
    (timedelta(days=1, minutes=16), LATE, 2, 0.20),
    (timedelta(days=30), LATE, 30, 0.35),                     # capped
    (-timedelta(days=2), ON_TIME, 0, 0),
])
@pytest.mark.unit
def test_late_policy_arithmetic(after_due, status, days, penalty):
    late = assess(POLICY, POLICY.due + after_due)
    assert (late.status, late.late_days, late.penalty) == (status, days, pytest.approx(penalty))


@pytest.mark.unit
def test_late_policy_exact_rounding_and_undated():
    policy = POLICY.model_copy(update={"late_days_rounding": "exact"})
    late = assess(policy, policy.due + timedelta(minutes=15, hours=36))
    assert late.late_days == pytest.approx(1.5) and late.penalty == pytest.approx(0.15)
    assert late.apply(8) == pytest.approx(6.8)
    assert assess(policy, None).status == UNDATED
    assert assess(None, policy.due + timedelta(days=9)).penalty == 0


def test_times_from_the_lms_win_and_undated_students_are_named(setup):
    """--times gives the platform's time (erin had none; carol's LMS time is on time); without it, a warning."""
    result, _ = export(setup, "csv")
    warning = next(line for line in result.stderr.splitlines() if "no submission time from the platform" in line)
    assert "Eddy, Erin" in warning and "--times" in warning
    (setup / "times.csv").write_text("submission,submitted_at\nerin,2025-03-16T11:59:00+01:00\n"
                                     "carol,2025-03-14T20:00:00+01:00\n")
    result, text = export(setup, "csv", "--times", str(setup / "times.csv"))
    assert result.returncode == 0, result.stderr
    assert not any("no submission time from the platform" in line for line in result.stderr.splitlines())
    assert any("Eddy, Erin" in line and "2 day(s) late" in line for line in result.stderr.splitlines())
    assert not any("Cole, Carol" in line and "late" in line for line in result.stderr.splitlines())
