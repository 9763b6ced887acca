"""`grade gradescope`: the autograder zip, run the way Gradescope runs it, in a temporary /autograder.

https://gradescope-autograders.readthedocs.io/en/latest/specs/: the zip is unpacked into
/autograder/source, setup.sh runs once, run_autograder (copied to /autograder/run_autograder) runs for
each submission (files in /autograder/submission) and writes /autograder/results/results.json.
AUTOGRADER_ROOT and AUTOGRADER_PYTHON point it at a temporary root and at this venv's python.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from autograder.course import load_course
from autograder.gradescope.autograder_zip import build_gradescope

from tests.support import isolation_attacks as attacks
from .conftest import CORPUS, ROOT, run_grade
from tests.support.submission_forms import module_notebooks, one_notebook, zipped

COURSE = load_course(ROOT / "course.yml")
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
BUGGY_STEP = "trainable_attention.scaled_attention_weights"


@pytest.fixture(scope="module")
def autograder_zip(gradescope_zip) -> Path:
    """``grade gradescope``'s zip, built once per run (tests/support/built_for_the_run.py); only read here."""
    return gradescope_zip


def gradescope_root(tmp: Path, archive: Path) -> Path:
    """/autograder as Gradescope lays it out: source/ (the zip), run_autograder, submission/, results/."""
    root = tmp / "autograder"
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            target = root / "source" / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(info))
            target.chmod(stat.S_IMODE(info.external_attr >> 16))
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps({"id": 1, "assignment": {"title": "attention"}}))
    return root


def run_autograder(root: Path, python: str = sys.executable) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": python}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    validate(results)
    return done, results


def validate(results: dict) -> None:
    """The fields of Gradescope's results.json that this kit writes, with their types and values."""
    assert isinstance(results["score"], (int, float))
    assert isinstance(results["execution_time"], (int, float))
    assert isinstance(results["output"], str) and results["output"]
    assert results["visibility"] in VISIBILITY and results["stdout_visibility"] in VISIBILITY
    assert isinstance(results["tests"], list)
    for test in results["tests"]:
        assert isinstance(test["name"], str) and isinstance(test["number"], str)
        assert isinstance(test["score"], (int, float)) and isinstance(test["max_score"], (int, float))
        assert 0 <= test["score"] <= test["max_score"]
        assert test["status"] in ("passed", "failed")
        assert isinstance(test["output"], str)
        assert isinstance(test["tags"], list) and all(isinstance(t, str) for t in test["tags"])
        assert test["visibility"] in VISIBILITY


def test_zip_layout(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as z:
        infos = {i.filename: i for i in z.infolist()}
        setup = z.read("setup.sh").decode()
        requirements = z.read("requirements.txt").decode()
    for name in ("setup.sh", "run_autograder"):
        assert infos[name].external_attr >> 16 == 0o100755, name
    for name in ("course.yml", "pyproject.toml", "autograder/cli.py", "autograder/gradescope/run_autograder.py",
                 "autograder/unit/suites/pytest.ini", "autograder/check/public_cases.safetensors"):
        assert name in infos, name
    assert {f"solutions/{p.name}" for p in (ROOT / "solutions").glob("*.py")} <= set(infos)
    assert {f"autograder/unit/suites/{p.name}"
            for p in (ROOT / "autograder" / "unit" / "suites").glob("*.py")} <= set(infos)
    assert not [n for n in infos if "__pycache__" in n or n.endswith(".pyc")]
    assert "python3.11" in setup and "https://download.pytorch.org/whl/cpu" in setup
    assert "torch==2.13.0\n" in requirements and "pytest==" in requirements


def test_scripts_are_valid_bash(autograder_zip, tmp_path):
    root = gradescope_root(tmp_path, autograder_zip)
    for script in ("setup.sh", "run_autograder"):
        check = subprocess.run(["bash", "-n", str(root / "source" / script)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr


def test_the_zip_is_byte_identical_across_builds(tmp_path):
    repo = tmp_path / "repo"  # a snapshot: edits elsewhere in the repo during the test change nothing
    shutil.copytree(ROOT / "autograder", repo / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "solutions", repo / "solutions")
    for name in ("course.yml", "pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, repo / name)
    one = build_gradescope(tmp_path / "one.zip", repo / "course.yml")["zip"].read_bytes()
    two = build_gradescope(tmp_path / "two.zip", repo / "course.yml")["zip"].read_bytes()
    assert one == two
    with zipfile.ZipFile(tmp_path / "one.zip") as z:
        names = [i.filename for i in z.infolist()]
        assert names == sorted(names)
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_no_exercise_files_still_gets_results(autograder_zip, tmp_path):
    root = gradescope_root(tmp_path, autograder_zip)
    (root / "submission" / "notes.txt").write_text("I did not upload my code")
    _, results = run_autograder(root)
    assert results["score"] == 0 and "simple_attention.py" in results["output"]


def test_a_python_that_does_not_start_still_gets_results(autograder_zip, tmp_path):
    root = gradescope_root(tmp_path, autograder_zip)
    done, results = run_autograder(root, python=str(tmp_path / "no-such-python"))
    assert results["score"] == 0 and "not graded" in results["output"]
    assert "wrote no results" in done.stderr


def test_a_grading_crash_still_gets_results(autograder_zip, tmp_path):
    root = gradescope_root(tmp_path, autograder_zip)
    for path in (ROOT / "solutions").glob("*.py"):
        shutil.copyfile(path, root / "submission" / path.name)
    (root / "source" / "course.yml").write_text("unit: attention\nsteps: {nope\n")  # a broken course
    _, results = run_autograder(root)
    assert results["score"] == 0 and "The autograder failed" in results["output"]


def test_a_correct_submission_in_a_subfolder_gets_full_marks(autograder_zip, tmp_path):
    root = gradescope_root(tmp_path, autograder_zip)
    folder = root / "submission" / "my attention"  # students often upload a folder
    folder.mkdir()
    for path in (ROOT / "solutions").glob("*.py"):
        shutil.copyfile(path, folder / path.name)
    done, results = run_autograder(root)
    assert results["tests"], results["output"]
    assert f"kit: {root / 'source' / 'autograder'}" in done.stdout  # the zip's code graded, not the repo's
    assert results["score"] == COURSE.max_points() > 0
    assert {t["status"] for t in results["tests"]} == {"passed"}
    assert sum(t["max_score"] for t in results["tests"]) == COURSE.max_points()
    expected = {f"{step} {count}": ("visible" if spec.visibility == "public" else "after_published")
                for step, s in COURSE.steps.items() for count, spec in s.counts.items()}
    got = {t["name"].split(":", 1)[0]: t["visibility"] for t in results["tests"]}
    assert got == expected
    assert "after_published" in got.values()


def test_a_buggy_submission_loses_exactly_its_step(graded_forms):
    results = graded_forms["py files"]  # bug_no_scaling's .py files in /autograder/submission
    assert results["tests"], results["output"]
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert {t["name"].split(" ", 1)[0] for t in failed} == {BUGGY_STEP}
    lost = sum(t["max_score"] for t in failed)
    assert lost == sum(c.points for c in COURSE.steps[BUGGY_STEP].counts.values())
    assert results["score"] == COURSE.max_points() - lost


# -- every form a student may upload, as grade autograde takes it ------------------------------------
def _forms(tmp: Path) -> dict[str, callable]:
    source = CORPUS / "bug_no_scaling"
    return {
        "py files": lambda sub: [shutil.copyfile(p, sub / p.name) for p in source.glob("*.py")],
        "a zip": lambda sub: zipped(source, sub / "attention.zip"),
        "a zip of a folder": lambda sub: zipped(source, sub / "mine.zip", prefix="my attention/"),
        "one notebook per module": lambda sub: module_notebooks(source, sub),
        "one notebook for all": lambda sub: one_notebook(source, sub, headings=True),
        "one notebook for all, no headings": lambda sub: one_notebook(source, sub, headings=False),
    }


@pytest.fixture(scope="module")
def graded_forms(autograder_zip, tmp_path_factory) -> dict[str, dict]:
    """bug_no_scaling uploaded in each form of ``_forms``, each graded by run_autograder in a /autograder of its own:
    form -> its results.json. Read by the buggy submission's test (the .py files) and by the comparison of every form
    with ``grade autograde``."""
    tmp = tmp_path_factory.mktemp("forms")
    graded = {}
    for i, (form, put) in enumerate(_forms(tmp).items()):
        root = gradescope_root(tmp / f"form{i}", autograder_zip)
        (root / "submission_metadata.json").write_text(json.dumps({"created_at": "2026-12-10T14:03:22.5-08:00"}))
        put(root / "submission")
        graded[form] = run_autograder(root)[1]
    return graded


def test_every_form_grades_as_grade_autograde_grades_the_folder(graded_forms, tmp_path):
    out = tmp_path / "folder-results"
    assert run_grade("autograde", str(CORPUS / "bug_no_scaling"), "--out", str(out)).returncode == 0
    expected = json.loads((out / "bug_no_scaling" / "results.json").read_text())
    for form, results in graded_forms.items():
        assert results["score"] == expected["score"], (form, results["output"])
        assert [(t["name"], t["status"]) for t in results["tests"]] == \
            [(t["name"], t["status"]) for t in expected["tests"]], form
        assert results["extra_data"]["submitted_at"] == "2026-12-10T14:03:22.500000-08:00", form


# -- the reference out of the workers' reach, in Gradescope's layout -----------------------------------------------
@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs the autograder as root; its workers take other uids")
def test_setup_sh_keeps_the_source_from_a_thief_at_uid_rlimits(autograder_zip):
    """/autograder as Gradescope lays it out, where every user may enter (as in its image), the zip's files as it
    unpacks them (0644). At uid+rlimits (a container without namespaces or Landlock) a thief of the reference makes
    the run refuse while the source is readable, naming it; after setup.sh's own chmod line it is graded, and gains
    nothing over the stubs (0). Under uid+landlock the source's modes do not matter."""
    from autograder.gradescope.scripts import SETUP_SH  # noqa: PLC0415 - this test's alone

    base = Path(tempfile.mkdtemp(prefix="agx-gradescope-", dir="/tmp"))
    try:
        base.chmod(0o755)
        root = gradescope_root(base, autograder_zip)
        attacks.reference_thief(base / "thief", token=base.name)
        for path in (base / "thief").glob("*.py"):
            shutil.copyfile(path, root / "submission" / path.name)
        for level in ("uid+landlock", "uid+rlimits"):
            os.environ["AUTOGRADER_ISOLATION"] = level
            try:
                done, results = run_autograder(root)
            finally:
                del os.environ["AUTOGRADER_ISOLATION"]
            if level == "uid+landlock":
                if results.get("extra_data", {}).get("isolation") != level:
                    continue  # no Landlock here: the other level is the test
                assert results["score"] == 0 and results["tests"], results["output"][:2000]
            else:
                assert results["score"] == 0 and not results["tests"], results["output"][:2000]
                assert "a worker's uid could read" in results["output"] and str(root / "source") in results["output"]
        chmod = next(line for line in SETUP_SH.splitlines() if line.startswith("chmod -R go-rwx"))
        subprocess.run(["bash", "-c", chmod], env={"SOURCE": str(root / "source")}, check=True)
        os.environ["AUTOGRADER_ISOLATION"] = "uid+rlimits"
        try:
            done, results = run_autograder(root)
        finally:
            del os.environ["AUTOGRADER_ISOLATION"]
        assert results["extra_data"]["isolation"] == "uid+rlimits", results["output"][:2000]
        assert results["tests"] and results["score"] == 0, done.stdout[-2000:]
    finally:
        shutil.rmtree(base, ignore_errors=True)
