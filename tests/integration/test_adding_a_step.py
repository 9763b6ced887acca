"""docs/adding-a-step.md, done for real: a toy step added in solutions/, course.yml and the unit's suite only."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys


from .conftest import ROOT, run_grade

SOLUTION = '''

def scale_by_two(x):
    """A toy step: every entry of x doubled.

    Shapes: x [...] -> [...].
    """
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION
'''
SUITE = '''

@step("simple_attention.scale_by_two")
class TestScaleByTwo:
    def test_values(self, check):
        check.call(torch.tensor([1.0, 2.0, 3.0]), case="a small vector", public=True, grad=True, arg_names=["x"])

    def test_randomized(self, check):
        check.call(rand(3, 4, seed=7), case="random 3x4", grad=True, arg_names=["x"])
'''
COURSE_ENTRY = '''  simple_attention.scale_by_two:
    title: A toy step
    counts: {values: 1, randomized: 1}
'''


def test_a_toy_step_added_in_three_places_is_graded(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    shutil.copytree(ROOT / "solutions", course / "solutions")
    shutil.copytree(ROOT / "autograder" / "unit" / "suites", course / "autograder" / "unit" / "suites")
    text = (ROOT / "course.yml").read_text()
    anchor = "  # --- self-attention with trainable weights"
    assert anchor in text
    (course / "course.yml").write_text(text.replace(anchor, COURSE_ENTRY + "\n" + anchor, 1))
    with open(course / "solutions" / "simple_attention.py", "a") as fh:
        fh.write(SOLUTION)
    with open(course / "autograder" / "unit" / "suites" / "test_simple_attention.py", "a") as fh:
        fh.write(SUITE)

    # grade assign: the exercises and the public cases (written here, not into the kit)
    code = ("import sys; from pathlib import Path; from autograder.assign.build import assign; "
            "print(assign(Path(sys.argv[1]), cases_dir=Path(sys.argv[2])))")
    cases = course / "autograder" / "check"  # the copy's own kit folder, where grade autograde finds its cases
    cases.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-c", code, str(course / "course.yml"), str(cases)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    stub = (course / "exercises" / "simple_attention.py").read_text()
    assert "def scale_by_two(x):" in stub and "return 2 * x" not in stub and "NotImplementedError" in stub
    public = json.loads((cases / "public_cases.json").read_text())
    assert "simple_attention.scale_by_two" in public["steps"]

    # a submission that has it, and one that does not
    subs = tmp_path / "subs"
    for name, extra in (("has_it", "\n\ndef scale_by_two(x):\n    return x + x\n"), ("lacks_it", "")):
        folder = subs / name
        folder.mkdir(parents=True)
        for source in (ROOT / "solutions").glob("*.py"):
            kept = "".join(line for line in source.read_text().splitlines(True)
                           if "SOLUTION" not in line or "###" not in line)
            (folder / source.name).write_text(kept + (extra if source.stem == "simple_attention" else ""))
    out = tmp_path / "out"
    result = run_grade("autograde", str(subs), "--out", str(out), "--course", str(course / "course.yml"))
    assert result.returncode == 0, result.stderr[-3000:]
    has_it = json.loads((out / "has_it" / "results.json").read_text())
    lacks_it = json.loads((out / "lacks_it" / "results.json").read_text())
    assert has_it["score"] == 83
    assert lacks_it["score"] == 81
    toy = [t for t in lacks_it["tests"] if t["name"].startswith("simple_attention.scale_by_two ")]
    assert len(toy) == 2 and all("defines no scale_by_two" in t["output"] for t in toy)
