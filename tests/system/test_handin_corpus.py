"""Hand-ins as students hand them in (``tests/corpus/handins/make_handins.py``): notebooks saved by JupyterLab, Colab
and VS Code with IPython's own syntax, a %%writefile helper, a failing scratch cell, a slow training cell; folders with
sibling imports, both forms of a module, files exported from notebooks.

Each is first run in a real kernel (``kernel_label.py``: nbclient, past errors, as nbgrader runs a notebook), so each
is a fair hand-in and its label is what the kernel makes of it, apart from the kit. The labels are recorded
(``tests/corpus/handins/labels.json``, with a digest of the hand-ins' bytes and the label's code, which
``tests/unit/test_handin_labels.py`` holds to this checkout, and the versions of Python, torch and the kernel): a run
with those versions reads them, and labels two hand-ins again in kernels to show the recording is what a kernel here
makes of them; a run with other versions labels every hand-in in kernels (about 3 CPU-minutes) and says so. Then
``grade autograde`` grades them all, and ``grade check`` checks each: every step gets the kernel's verdict, or the
hand-in is named for a person (a correct hand-in that cannot be graded as handed in: a training cell over the step's
time, a file that is not UTF-8), and grade check says what autograde says. Each construct has a control that must
lose points.

Its cost: about a minute on a loaded 2-core machine with the labels recorded, most of it one ``grade autograde`` of
them all (the fixture, which every test only reads); 3 minutes more when every hand-in is labelled again.
"""
from __future__ import annotations

import json
import re
import sys
import warnings

import pytest

from tests.support.short_course import STEP_SECONDS

from .conftest import ROOT, run_grade

sys.path.insert(0, str(ROOT / "tests" / "corpus" / "handins"))
import kernel_label
import make_handins
import verdicts


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, short_course_file):
    """The hand-ins, their kernel labels, and each one's results.json from one ``grade autograde`` of them all, with the
    course's short step limit (tests/support/short_course.py): the slow training cell then spins a core for that
    limit, not the course's 20 s, and is over it either way."""
    root = tmp_path_factory.mktemp("handins")
    folders = make_handins.write(root / "handins")
    labels = kernel_label.recorded(folders)
    if labels is None:
        warnings.warn(f"{kernel_label.RECORDED.name} was recorded from other hand-ins, code or versions of "
                      f"{', '.join(('Python', *kernel_label.VERSIONS))}: every hand-in labelled in kernels (about 3 "
                      "CPU-minutes); record them with python tests/corpus/handins/kernel_label.py",
                      stacklevel=1)
        labels = kernel_label.label_all(folders)
    (root / "labels.json").write_text(json.dumps(labels, indent=1))  # for a look, with verdicts.py
    graded = run_grade("autograde", str(root / "handins"), "--out", str(root / "results"), "--jobs", "2",
                       "--course", str(short_course_file), timeout=1800)
    assert graded.returncode == 0, graded.stderr
    results = {name: json.loads((root / "results" / name / "results.json").read_text()) for name in folders}
    return folders, labels, results


def _output(results: dict) -> str:
    """What the student reads at the top of the feedback, without the page's markup."""
    return re.sub(r"<[^>]+>", "", results["output"]).replace("&#x27;", "'")


def test_each_hand_in_is_fair_in_a_kernel_and_each_control_loses(corpus):
    _folders, labels, _results = corpus
    assert labels["lab_control"]["differ"] == [] and labels["py_exported"]["differ"] == []
    # the failing cells fail in the kernel too: the hand-ins are what a student saw
    assert labels["lab_scratch_fails"]["errors"]["simple_attention.ipynb"] == [25]
    assert labels["colab_drive_unguarded"]["errors"]["simple_attention.ipynb"]
    # each control's construct hides a mistake the kernel's label sees
    assert labels["lab_bug"]["differ"] == ["trainable_attention.scaled_attention_weights"]
    assert labels["lab_writefile_bug"]["differ"] == ["trainable_attention.scaled_attention_weights"]
    assert labels["lab_failed_import_cell"]["differ"] == ["causal_attention.causal_attention_weights"]
    assert {s.split(".")[0] for s in labels["py_missing_helper"]["differ"]} == {"simple_attention"}
    assert {s.split(".")[0] for s in labels["py_causal_syntax_error"]["differ"]} == {"causal_attention"}
    assert labels["both_forms_stub_py"]["graded_from"]["causal_attention"] == "causal_attention.ipynb"
    assert labels["both_forms_stub_nb"]["graded_from"]["causal_attention"] == "causal_attention.py"


#: labelled again in kernels on every run: a failing cell in a notebook (its cell numbers) and a .py folder whose
#: helper is missing (a module that does not import)
RELABELLED = ("lab_scratch_fails", "py_missing_helper")


def test_the_recorded_labels_are_what_a_kernel_here_makes_of_the_hand_ins(corpus):
    folders, labels, _results = corpus
    again = kernel_label.label_all({name: folders[name] for name in RELABELLED})
    assert again == {name: labels[name] for name in RELABELLED}


def test_every_step_gets_the_kernel_s_verdict_or_the_hand_in_is_named(corpus):
    folders, labels, results = corpus
    found = {name: verdicts.compare(labels[name], results[name], name) for name in folders}
    print(verdicts.table(found))
    assert {name: v.unexplained for name, v in found.items() if v.unexplained} == {}
    named = {name: sorted(v.named) for name, v in found.items() if v.named}
    assert named == {name: sorted(spec["named"]) for name, spec in make_handins.HANDINS.items() if spec.get("named")}
    # a syntax error in causal_attention.py costs its own 17 points, not multihead_attention's
    assert results["py_causal_syntax_error"]["score"] == 64
    assert results["py_causal_latin1"]["score"] == 64
    # a slow cell costs its own module's steps, said as its own, and no other's
    slow = found["lab_slow_cell"]
    assert ({s.split(".")[0] for s, _ in slow.wrong} == {"multihead_attention"}
            and results["lab_slow_cell"]["score"] == 66)
    # one step's time, not one per step
    assert results["lab_slow_cell"]["execution_time"] < 2 * STEP_SECONDS + 15 < make_handins.TRAINING_SECONDS * 2


def test_a_failing_cell_is_named_by_notebook_and_cell_and_listed_only_where_it_changed_a_grade(corpus):
    _folders, labels, results = corpus
    scratch = _output(results["lab_scratch_fails"])
    assert "simple_attention.ipynb, code cell 25, line 1 raised RuntimeError" in scratch
    assert results["lab_scratch_fails"]["score"] == 81 and results["lab_scratch_fails"]["extra_data"]["problems"] == []
    [problem] = results["lab_failed_import_cell"]["extra_data"]["problems"]
    assert problem["kind"] == "cell_failed" and problem["steps"] == ["causal_attention.causal_attention_weights"]
    assert problem["cell"].startswith(
        f"causal_attention.ipynb, code cell "
        f"{labels['lab_failed_import_cell']['errors']['causal_attention.ipynb'][0]},")
    lost = [t["output"] for t in results["lab_failed_import_cell"]["tests"] if t["score"] < t["max_score"]]
    assert lost and all("causal_attention.ipynb, code cell" in text and "causal_attention.py" not in text
                        for text in lost)


def test_what_grading_does_not_run_and_what_it_wrote_is_said_once(corpus):
    _folders, _labels, results = corpus
    guard = _output(results["colab_guard"])
    assert guard.count("not run when grading") == 1 and "code cell 3: !pip install torch==2.3.0" in guard
    [shell] = [line for line in _output(results["vscode_shell_cells"]).splitlines() if "not run when grading" in line]
    assert "code cell 4: %%bash" in shell and "code cell 6: !nvidia-smi" in shell and "%%html" not in shell
    assert "attn_helpers.py was written by %%writefile in trainable_attention.ipynb" in _output(
        results["lab_writefile"])
    assert "input() answers an empty line when grading" in _output(results["lab_input"])
    assert "causal_attention.py and causal_attention.ipynb were both handed in: causal_attention.ipynb was graded" \
        in _output(results["both_forms_stub_py"])
    assert "causal_attention.py and causal_attention.ipynb were both handed in: causal_attention.py was graded" \
        in _output(results["both_forms_stub_nb"])


def test_messages_name_what_the_student_wrote(corpus):
    _folders, _labels, results = corpus
    every = json.dumps(results)
    assert "submission." not in every  # the kit's package name, never the student's
    slow = [t["output"] for t in results["lab_slow_cell"]["tests"] if t["score"] < t["max_score"]]
    assert all("multihead_attention.ipynb, code cell" in text and "multihead_attention.py" not in text for text in slow)


def test_grade_check_says_what_autograde_says_on_every_public_count(corpus, short_course_file):
    from autograder.check import intake, public_cases  # noqa: PLC0415 - imported on first use: torch is slow to load
    from autograder.check.run import run_check  # noqa: PLC0415 - imported on first use: torch is slow to load
    from autograder.sandbox.local_zygote import LocalZygote  # noqa: PLC0415 - imports torch

    folders, _labels, results = corpus
    data = public_cases.load(short_course_file.parent / "autograder" / "check")  # the course autograde graded with
    zygote = LocalZygote()
    differ, notes_of = {}, {}
    try:
        for name, folder in folders.items():
            checked = intake.prepare(folder, data["modules"], list(data["steps"]))
            notes: list[str] = []
            try:
                steps = run_check(checked.folder, data, zygote, None, checked.module_errors if checked.staged else None,
                                  checked.notebooks, notes)
            finally:
                checked.close()
            notes_of[name] = notes
            autograde = {t["name"].split(":", 1)[0]: t["score"] for t in results[name]["tests"]}
            for step in steps:
                for count in step.counts:
                    if step.blocked_by and autograde[f"{step.step} {count.count}"] > count.points:
                        continue  # shown as blocked by a step autograde deducts: the hidden grading uses a stand-in
                    if autograde[f"{step.step} {count.count}"] != count.points:
                        differ.setdefault(name, []).append(f"{step.step} {count.count}")
    finally:
        zygote.close()
    assert differ == {}
    assert any("simple_attention.ipynb, code cell 25, line 1 raised RuntimeError" in n
               for n in notes_of["lab_scratch_fails"])
