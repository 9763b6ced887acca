"""Attacks on the stand-in channel and the worker's answers (tests/corpus/standin_attacks/), each with what a sound
grader does.

* ``standin_root_class_oracle``: a call sent under a held stand-in's step, with a module tree whose root
  names the graded step itself, would have the reference worker compute the graded step: it scores no more
  than its control (the same stub, no trick).
* ``callback_unhashable_op``, ``frame_deep_json``: malformed frames written on the worker's own channel are
  that worker's protocol error (its step scores zero), never an error of the grader's.
* ``frame_header_amplification``: a 64 MB JSON header is refused before it is parsed (the trusted side's
  memory is not the student's to spend).
* ``reference_worker_memory_fill``: filling the shared reference worker's memory leaves nothing for the
  next submission: a correct submission graded after all of them in the same job keeps full marks.
* ``trace_forges_facts``: a trace function set at import rewrites the worker's answers after the student's call
  returned (no input modified in place, says the forged answer): what a worker says is a claim, and in-place
  changes are read from the trusted side's own argument buffer, so it scores what its control
  (``forges_facts_control``, the same bug, no tracer) scores, the in-place modification named.
* ``gc_callback_forges_facts``, ``finalizer_forges_facts``: the same forgery from a ``gc`` callback or a ``__del__``,
  which run while the worker builds its answer: the same, for the same reason.
"""
from __future__ import annotations

import json
import shutil

import pytest

from .conftest import ROOT, run_grade

STANDIN_ATTACKS = ROOT / "tests" / "corpus" / "standin_attacks"
ALICE = ROOT / "samples" / "submissions" / "alice"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("standin_attacks")
    subs = root / "subs"
    for path in sorted(STANDIN_ATTACKS.iterdir()):
        if path.is_dir():
            shutil.copytree(path, subs / path.name)
    shutil.copytree(ALICE, subs / "zz_after_them_all")  # graded last by the same job (one job)
    out = root / "out"
    # a cache of its own: no stand-in answer kept by an earlier test's batch spares the reference worker these calls
    run = run_grade("autograde", str(subs), "--out", str(out), "--jobs", "1", "--trust-submissions", timeout=1200,
                    env={"GRADE_CACHE_DIR": str(root / "cache")})
    results = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/results.json")}
    return run, results


def test_the_batch_finishes_without_a_grader_error(graded):
    run, results = graded
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert len(results) == len([p for p in STANDIN_ATTACKS.iterdir() if p.is_dir()]) + 1
    for name, result in results.items():
        assert not any("the grader itself failed" in t["output"] for t in result["tests"]), name


def test_a_tree_naming_another_step_computes_nothing_for_it(graded):
    _, results = graded
    assert results["standin_root_class_oracle"]["score"] <= results["standin_root_class_oracle_control"]["score"]


@pytest.mark.parametrize("name", ["callback_unhashable_op", "frame_deep_json", "frame_header_amplification"])
def test_a_malformed_frame_is_the_sender_s_zero_only(graded, name):
    _, results = graded
    result = results[name]
    assert 0 < result["score"] < 81
    assert results["zz_after_them_all"]["score"] == 81


def test_the_next_submission_keeps_full_marks(graded):
    _, results = graded
    assert results["zz_after_them_all"]["score"] == 81


def test_a_trace_function_forges_nothing(graded):
    _, results = graded
    attack, control = results["trace_forges_facts"], results["forges_facts_control"]
    assert attack["score"] == control["score"]
    for result in (attack, control):  # the bug judged alike: its input modified in place
        assert any("modified its input in place" in t["output"] for t in result["tests"])


@pytest.mark.parametrize("name", ["gc_callback_forges_facts", "finalizer_forges_facts"])
def test_a_finalizer_forges_nothing(graded, name):
    _, results = graded
    attack, control = results[name], results["forges_facts_control"]
    assert attack["score"] <= control["score"]
    said = {t["name"]: t["output"] for t in attack["tests"]}
    assert "modified its input in place" in said["simple_attention.normalize_sum values: Normalize scores by their sum"]
