"""course.yml is validated on load, with a message that names the key and its line."""
from __future__ import annotations

import pytest

from autograder.course import CourseError, load_course

from .conftest import ROOT, run_grade
from .test_recorded_from import copy_kit, grade

GOOD = (ROOT / "course.yml").read_text()


def write(tmp_path, text):
    path = tmp_path / "course.yml"
    path.write_text(text)
    return path


def test_the_unit_course_loads():
    course = load_course(ROOT / "course.yml")
    assert course.modules == ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]
    assert len(course.steps) == 24
    assert course.steps["simple_attention.attention_scores"].counts["values"].visibility == "public"
    assert course.steps["simple_attention.attention_scores"].counts["randomized"].visibility == "hidden"


def test_misspelled_key_names_key_line_and_suggestion(tmp_path):
    bad = GOOD.replace("    counts: {values: 1, gradients: 1, randomized: 1}\n  simple_attention.normalize_sum",
                       "    cuonts: {values: 1, gradients: 1, randomized: 1}\n  simple_attention.normalize_sum", 1)
    line = bad.splitlines().index("    cuonts: {values: 1, gradients: 1, randomized: 1}") + 1
    with pytest.raises(CourseError) as err:
        load_course(write(tmp_path, bad))
    text = str(err.value)
    assert f"line {line}" in text and "cuonts" in text and "did you mean 'counts'" in text


def test_bad_points_value_names_the_count(tmp_path):
    bad = GOOD.replace("counts: {values: 1, randomized: 1}", "counts: {values: one, randomized: 1}", 1)
    with pytest.raises(CourseError, match=r"line \d+: steps\.trainable_attention\.init_qkv\.counts\.values"):
        load_course(write(tmp_path, bad))


def test_invalid_yaml_names_the_line(tmp_path):
    with pytest.raises(CourseError, match=r"line 2, column \d+: not valid YAML: mapping values"):
        load_course(write(tmp_path, "unit: a\ntitle: b: c\nsteps: {}\n"))


def test_bad_step_id_and_missing_keys(tmp_path):
    with pytest.raises(CourseError) as err:
        load_course(write(tmp_path, "unit: a\nsteps:\n  nodot:\n    title: x\n    counts: {values: 1}\n"))
    assert "title: required key is missing" in str(err.value)
    assert "must be module.name" in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(CourseError, match="file not found"):
        load_course(tmp_path / "nope.yml")


def test_autograde_stops_before_grading_on_a_broken_course(tmp_path):
    path = write(tmp_path, GOOD.replace("title: Simple causal mask", "title: Simple causal mask\n    weight: 3"))
    result = run_grade("autograde", str(ROOT / "exercises"), "--out", str(tmp_path / "out"), "--course", str(path))
    assert result.returncode == 2
    assert "unknown key 'weight'" in result.stderr and "line" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_count_without_a_test_stops_the_run(tmp_path):
    """An instructor adds a count to course.yml and no test for it: grade autograde says course.yml changed since
    grade assign (and grades nothing); grade assign names the count, and records nothing."""
    kit = copy_kit(tmp_path / "kit")
    cases = (kit / "autograder" / "check" / "public_cases.json").read_bytes()
    write(kit, GOOD.replace("counts: {values: 1, randomized: 1}\n  trainable_attention.project",
                            "counts: {values: 1, randomized: 1, speed: 1}\n  trainable_attention.project"))
    graded = grade(kit, "autograde", str(ROOT / "exercises"), "--out", str(tmp_path / "out"))
    assert graded.returncode == 2 and not (tmp_path / "out").exists()
    assert "recorded before the last change to course.yml: run `grade assign`" in graded.stderr, graded.stderr
    assigned = grade(kit, "assign")
    assert assigned.returncode == 2
    assert "trainable_attention.init_qkv has a count 'speed' but suites/ has no test for it" in assigned.stderr
    assert (kit / "autograder" / "check" / "public_cases.json").read_bytes() == cases


def test_late_policy_loads_and_a_bad_one_names_key_and_line(tmp_path):
    policy = load_course(ROOT / "course.yml").late_policy
    assert policy is not None and policy.due.utcoffset() is not None and 0 <= policy.penalty_per_day <= 100
    lines = GOOD.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  grace_minutes:"))
    bad = GOOD.replace("  grace_minutes:", "  grace_minuts:", 1)
    with pytest.raises(CourseError) as err:
        load_course(write(tmp_path, bad))
    assert (f"line {at + 1}: late_policy.grace_minuts: unknown key 'grace_minuts' "
            "(did you mean 'grace_minutes'?)") in str(err.value)
    due = next(line for line in lines if line.startswith("  due:"))
    naive = GOOD.replace(due, "  due: 2025-03-14T23:59:00", 1)
    with pytest.raises(CourseError, match=r"line \d+: late_policy\.due: needs a UTC offset"):
        load_course(write(tmp_path, naive))
    with pytest.raises(CourseError, match=r"late_policy\.penalty_per_day: .*less than or equal to 100"):
        load_course(write(tmp_path, GOOD.replace("penalty_per_day: 10 ", "penalty_per_day: 150 ", 1)))
