"""``bench/nbgrader_side_by_side.py``: the course it makes, the notebooks it fills, and its printed figures.

The unit test hands in three students (correct, buggy, stubs) in a copy of the bench's released course (``grade
nbgrader`` and ``nbgrader generate_assignment``, about 15 s, built once per run and shared with
tests/system/test_nbgrader_interrupt.py) and checks that every solution cell holds the student's corpus
code, then runs each student's notebooks in-process the way ``nbgrader autograde`` grades them (the source
notebook's test cells, hidden cases included, after the student's solution cells; no kernel) and checks the
cells they fail are those of the corpus label's steps. The slow test runs the whole script for one student
who loses points (the real nbgrader and the kit, timed) and reads its Markdown.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import load_course
from autograder.nbgrader_course import helper
from autograder.course.sources import read_module

from .conftest import MANIFEST, ROOT

nbformat = pytest.importorskip("nbformat")
bench = pytest.importorskip("bench.nbgrader_side_by_side")

COURSE = load_course(ROOT / "course.yml")
CORPUS = ROOT / "tests" / "corpus" / "submissions"
WHO = {"ana": "correct_einsum", "ben": "bug_no_scaling", "cai": "stubs"}


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader") or {}


@pytest.fixture(scope="module")
def course(tmp_path_factory, nbgrader_bench_release) -> Path:
    """A copy of the bench's released course (what ``bench.make_course`` builds before the class hands in), with WHO's
    notebooks in submitted/."""
    dest = tmp_path_factory.mktemp("nbbench") / "course"
    shutil.copytree(nbgrader_bench_release, dest, symlinks=True)
    bench.hand_in(dest, WHO)
    return dest


def unfilled(folder: Path, submission: Path) -> list[str]:
    """The solution cells of ``folder``'s notebooks that do not hold ``submission``'s code for them."""
    missing = []
    for path in sorted(folder.glob("*.ipynb")):
        own = read_module(submission / f"{path.stem}.py")
        for cell in nbformat.read(str(path), as_version=4).cells:
            grade_id = _meta(cell).get("grade_id", "")
            if not _meta(cell).get("solution"):
                continue
            if grade_id.startswith("from_"):
                theirs = read_module(submission / f"{grade_id[len('from_'):-len('_code')]}.py")
                wanted = [theirs.pieces[n] for m, n in own.borrowed if n in theirs.pieces]
            else:
                wanted = [own.pieces[grade_id]]
            if not all(piece in cell.source for piece in wanted):
                missing.append(f"{path.stem}/{grade_id}")
    return missing


def graded_in_process(source: Path, submitted: Path) -> dict[str, bool]:
    """``"<module>/<test cell>"`` -> passed, for the student's notebooks graded as ``nbgrader autograde`` does: the
    source notebook (its locked cells, test cells with their hidden cases) with the student's solution cells
    (by grade_id), every code cell run in one namespace per notebook, in the source folder (the checking helper
    and data file), a test cell passing when it raises nothing."""
    passed = {}
    here = os.getcwd()
    os.chdir(source)
    sys.path.insert(0, str(source))
    try:
        for path in sorted(source.glob("*.ipynb")):
            answers = {_meta(c)["grade_id"]: c.source for c in nbformat.read(str(submitted / path.name), 4).cells
                       if _meta(c).get("solution")}
            namespace: dict = {"__name__": "__main__"}
            for cell in nbformat.read(str(path), as_version=4).cells:
                if cell.cell_type != "code":
                    continue
                meta = _meta(cell)
                code = answers[meta["grade_id"]] if meta.get("solution") else cell.source
                if not meta.get("grade"):  # setup, helper, solution cells: they must run
                    exec(compile(code, meta.get("grade_id", "cell"), "exec"), namespace)  # noqa: S102 - the corpus
                    continue
                try:
                    exec(compile(code, meta["grade_id"], "exec"), namespace)  # noqa: S102 - the kit's own checks
                    passed[f"{path.stem}/{meta['grade_id']}"] = True
                except Exception:  # noqa: BLE001 - as in a kernel: the cell's error is its verdict
                    passed[f"{path.stem}/{meta['grade_id']}"] = False
    finally:
        os.chdir(here)
        sys.path.remove(str(source))
        sys.modules.pop(helper.MODULE, None)
    return passed


def label_cells(name: str) -> set[str]:
    """The test cells a corpus submission should fail, from its manifest label: its steps' counts."""
    steps = COURSE.steps if name == "stubs" else (MANIFEST[name].get("steps") or [])
    return {f"{s.split('.')[0]}/test_{s.split('.', 1)[1]}_{c}" for s in steps for c in COURSE.steps[s].counts}


def test_the_course_is_made_and_each_solution_cell_holds_the_students_code(course):
    release = course / "release" / bench.ASSIGNMENT
    for student, name in WHO.items():
        folder = course / "submitted" / student / bench.ASSIGNMENT
        assert sorted(p.stem for p in folder.glob("*.ipynb")) == sorted(COURSE.modules)
        assert (folder / "timestamp.txt").read_text() == bench.STAMP
        for path in folder.glob("*.ipynb"):
            nbformat.validate(nbformat.read(str(path), as_version=4))
        assert unfilled(folder, CORPUS / name) == [], student
    # the control: the release as handed out is not filled with anyone's code
    assert len(unfilled(release, CORPUS / "correct_einsum")) == sum(
        1 for p in release.glob("*.ipynb") for c in nbformat.read(str(p), 4).cells if _meta(c).get("solution"))


def test_the_filled_notebooks_grade_as_their_corpus_labels(course):
    """In-process, nbgrader's way: correct passes every test cell, the buggy student fails exactly its labelled
    step's cells, the stubs fail all. Control: the source notebooks graded the same way (a filling that left the
    reference code in place) fail nothing, so they would not match the buggy student's label."""
    source = course / "source" / bench.ASSIGNMENT
    graded = {s: graded_in_process(source, course / "submitted" / s / bench.ASSIGNMENT) for s in WHO}
    assert len(graded["ana"]) == sum(len(spec.counts) for spec in COURSE.steps.values())
    for student, name in WHO.items():
        failed = {cell for cell, ok in graded[student].items() if not ok}
        assert failed == label_cells(name), student
    reference = graded_in_process(source, source)
    assert reference.keys() == graded["ben"].keys() and all(reference.values())
    assert label_cells("bug_no_scaling")


@pytest.mark.unit
def test_disagreement_is_named_by_student_and_cell():
    """compare(): equal gradebooks give nothing; one cell changed is named with its student and both scores."""
    nb = {"s1": {"trainable_attention/test_scaled_attention_weights_values": 1.0,
                 "simple_attention/test_x_values": 1.0}}
    same = {"s1": dict(nb["s1"])}
    assert bench.compare(nb, same, {"s1": 2.0}, {"s1": "bug"}) == []
    other = {"s1": {**nb["s1"], "trainable_attention/test_scaled_attention_weights_values": 0.0}}
    assert bench.compare(nb, other, {"s1": 1.0}, {"s1": "bug"}) == [
        "s1 (bug): trainable_attention/test_scaled_attention_weights_values: nbgrader 1.0, kit 0.0"]
    assert bench.compare(nb, same, {"s1": 1.0}, {"s1": "bug"})  # results.json against the kit's own gradebook


@pytest.mark.unit
def test_a_submission_waiting_for_manual_grading_in_one_gradebook_only_is_named():
    who = {"s1": "bug", "s2": "correct"}
    assert bench.compare_waiting({"s1": False, "s2": False}, {"s1": False, "s2": False}, who) == []
    assert bench.compare_waiting({"s1": False, "s2": False}, {"s1": True, "s2": False}, who) == [
        "s1 (bug): waits for manual grading: nbgrader False, kit True"]


@pytest.mark.unit
def test_an_answer_commented_differently_in_one_gradebook_is_named():
    who = {"s1": "stubs"}
    same = {"s1": {"simple_attention/softmax_naive": "No response.", "simple_attention/attention_scores": None}}
    assert bench.compare_comments(same, {"s1": dict(same["s1"])}, who) == []
    other = {"s1": {**same["s1"], "simple_attention/softmax_naive": None}}
    assert bench.compare_comments(same, other, who) == [
        "s1 (stubs): simple_attention/softmax_naive: comment: nbgrader 'No response.', kit None"]


RATIO = re.compile(r"^ratio nbgrader / kit, wall, paired: \*\*(\d+(?:\.\d+)?)x\*\*", re.M)
AGREE = re.compile(r"^scores: the two agree on all (\d+) students, test cell by test cell", re.M)


def test_the_script_prints_the_ratio_and_the_agreement(tmp_path):
    """The whole script, one student who loses points (no scaling: some test cells pass, some fail): the real
    nbgrader autograde and grade autograde --nbgrader, paired; its Markdown has the per-student rows, the ratio and
    the agreement line, cell by cell. Control: the same report built from the run with one cell's points changed
    says DISAGREE and has no agreement line. (Many students, correct, buggy and stubs, graded by both:
    bench/nbgrader_side_by_side.py's own runs, bench/RESULTS.md.)

    Its cost: 50 to 90 s on a loaded 2-core machine, the script's own minimum (--n 1, one pair, the kit timed
    with and without its kept reference answers); it is what the bench's figures rest on."""
    work = tmp_path / "work"
    script = [sys.executable, str(ROOT / "bench" / "nbgrader_side_by_side.py")]
    done = subprocess.run([*script, "--n", "1", "--mix", "bug_no_scaling", "--keep", str(work)], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "| `nbgrader autograde attention` |" in out and "| `grade autograde --nbgrader` |" in out, out
    assert RATIO.search(out) and float(RATIO.search(out).group(1)) > 0, out
    # the kit also ran with no reference answers kept (that `grade nbgrader` keeps them and the kit reads them:
    # tests/integration/test_stored_answers.py)
    assert "| the same, nothing kept (`GRADE_REFERENCE_CACHE=0`) |" in out, out
    assert AGREE.search(out) and AGREE.search(out).group(1) == "1", out
    # the control: the gradebooks of that run, one of the kit's cells changed
    a, b = work / "nbgrader0", work / "kit0"
    nbg, kit = bench.gradebook_points(a), bench.gradebook_points(b)
    assert nbg == kit and len(kit) == 1
    points = kit["student000"].values()
    assert any(p == 0 for p in points) and any(p > 0 for p in points)  # partial credit, agreed on cell by cell
    assert bench.waiting_for_a_person(a) == bench.waiting_for_a_person(b) == {"student000": False}
    assert (bench.solution_comments(a) == bench.solution_comments(b)
            and len(bench.solution_comments(b)["student000"]) > 5)
    cell = next(iter(kit["student000"]))
    kit["student000"][cell] -= 1
    who = bench.students(1, ["bug_no_scaling"])
    differ = bench.compare(nbg, kit, bench.kit_totals(b / "kit-results"), who)
    assert differ and differ[0].startswith(f"student000 (bug_no_scaling): {cell}: nbgrader")
    result = {"who": who, "differ": differ, "isolation": "",
              "totals": bench.kit_totals(b / "kit-results"),
              "runs": [{"nbgrader": bench.measure([sys.executable, "-c", "pass"]),
                        "kit": bench.measure([sys.executable, "-c", "pass"]),
                        "kitcold": bench.measure([sys.executable, "-c", "pass"])}]}
    text = bench.report(result, 1, None)
    assert "DISAGREE on 1 of 1 students" in text and not AGREE.search(text) and RATIO.search(text)
