"""One environment: graded code imports what the student bundle and the Gradescope image both install, never the
grader's own extras, and an import of anything else is one line, the same verdict from the bundle's grade check and
from grade autograde (where matplotlib, a test extra, is installed)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import metadata

import pytest

from autograder.gradescope.autograder_zip import grading_roots
from autograder.release.pins import installed_closure
from autograder.release.student_files import STUDENT_ROOTS
from autograder.worker import importable

from .conftest import ROOT, run_grade

ALICE = ROOT / "samples" / "submissions" / "alice"


def top_level_modules(distribution: str) -> set[str]:
    """The top-level import names a distribution installs, read from its RECORD."""
    found = set()
    for path in metadata.distribution(distribution).files or []:
        top = path.parts[0]
        if top.endswith((".dist-info", ".data")) or top in ("..", "__pycache__"):
            continue
        if len(path.parts) == 1:
            if top.endswith(".py"):
                found.add(top[:-3])
            elif top.endswith((".so", ".pyd")):
                found.add(top.split(".")[0])
        elif "." not in top and "-" not in top:
            found.add(top)
    return found


@pytest.mark.unit
def test_the_importable_modules_are_what_both_environments_install():
    bundle = installed_closure(STUDENT_ROOTS)
    gradescope = installed_closure(grading_roots(ROOT / "pyproject.toml"))
    expected = set().union(*(top_level_modules(d) for d in set(bundle) & set(gradescope)))
    assert importable.MODULES == expected, (
        f"autograder/worker/importable.py: MODULES drifted from the pins; set it to {sorted(expected)}")
    # controls: the grader's own extras, and what one environment only installs, are not importable
    for extra in ("matplotlib", "nbgrader", "dask", "distributed", "jupyterlab", "yaml", "pydantic", "tqdm",
                  "pytest"):
        assert not importable.allowed(extra), extra
    for module in ("torch", "numpy", "math", "collections", "submission", "torch.nn.functional"):
        assert importable.allowed(module), module


@pytest.mark.unit
def test_the_hook_refuses_in_one_line_what_is_installed_here():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from autograder.worker import importable; "
            "import numpy; importable.install()\ntry:\n    import matplotlib\nexcept ModuleNotFoundError as e:\n"
            "    print(e)\nimport math, torch\nprint('ok')")
    run = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [importable.refused("matplotlib"), "ok"]
    assert len(importable.refused("m" * 50)) <= 200  # whole on a hidden count, which shows 200 characters
    # the control: without the hook, this interpreter imports matplotlib (a test extra of the kit)
    plain = subprocess.run([sys.executable, "-c", "import matplotlib; print('imported')"], capture_output=True,
                           text=True, timeout=120)
    assert plain.stdout.strip() == "imported", plain.stderr


@pytest.mark.slow
def test_grade_check_in_the_bundle_and_grade_autograde_agree_on_an_import(tmp_path):
    subs = tmp_path / "subs"
    for name, extra in (("plots", "import matplotlib\n"), ("plain", "")):  # the control: the same code, no import
        shutil.copytree(ALICE, subs / name)
        path = subs / name / "causal_attention.py"
        path.write_text(extra + path.read_text())
    built = run_grade("release", "--out", str(tmp_path / "dist" / "bundle"), timeout=900)
    assert built.returncode == 0, built.stderr
    bundle = tmp_path / "dist" / "bundle"
    graded = run_grade("autograde", str(subs), "--out", str(tmp_path / "results"), timeout=900)
    assert graded.returncode == 0, graded.stderr
    line = importable.refused("matplotlib")
    for name in ("plots", "plain"):
        # the bundle's own grade check (its autograder package, not the kit's), in this venv, where matplotlib is
        checked = subprocess.run([sys.executable, "-m", "autograder.cli", "check", str(subs / name), "--json"],
                                 cwd=bundle, capture_output=True, text=True, timeout=600,
                                 env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GRADE_CHECK_SERVER": "0"})
        assert checked.returncode in (0, 1), checked.stderr
        check = json.loads(checked.stdout)
        results = json.loads((tmp_path / "results" / name / "results.json").read_text())
        public = {t["name"].split(":")[0]: t for t in results["tests"] if t["visibility"] == "visible"}
        # the same points on every public count grade check runs, and the same words for the import. A step that
        # builds on the module that does not import (the wrapper's heads are its CausalAttention) cannot be run by
        # grade check, which holds no reference code: it is shown blocked, each count saying why in the student's
        # terms; the hidden grading runs it beside a correct CausalAttention, as beside any failing one, so that
        # the import costs the steps of its own module only
        blocked = set()
        for step in check["steps"]:
            for count in step["counts"]:
                test = public[f"{step['step']} {count['count']}"]
                if step["blocked_by"]:
                    blocked.add((step["step"], step["blocked_by"]))
                    assert "causal_attention.py could not be imported" in " ".join(count["feedback"]), count
                    assert test["score"] == test["max_score"], (name, step["step"], count["count"])
                    continue
                assert count["points"] == test["score"], (name, step["step"], count["count"])
        wrapper = ("multihead_attention.MultiHeadAttentionWrapper", "causal_attention.CausalAttention")
        assert blocked == ({wrapper} if name == "plots" else set()), name
        said_check = line in checked.stdout
        said_grade = any(line in t["output"] for t in results["tests"])
        assert said_check == said_grade == (name == "plots"), name
    plots = json.loads((tmp_path / "results" / "plots" / "results.json").read_text())
    plain = json.loads((tmp_path / "results" / "plain" / "results.json").read_text())
    own = sum(t["max_score"] for t in plots["tests"] if t["name"].startswith("causal_attention."))
    assert plain["score"] == 81 and plots["score"] == 81 - own  # the import costs the steps of its module, no more
