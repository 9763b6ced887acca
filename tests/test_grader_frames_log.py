"""The grader's frames of a call into a student's object go to grader_errors.log, never to the student (issue 22)."""
from __future__ import annotations

import pytest

from autograder.autograde import grader_log
from autograder.grading.suites.problems import Recorder

from .kit_files import kit_files_named, scan

pytestmark = pytest.mark.unit

FAILED_LOAD = {"ok": False, "error": {"type": "LookupError", "phase": "loading the reference weights",
                                      "message": "your module has no parameter named W_query.weight", "where": None,
                                      "grader_frames": '  File "/kit/autograder/worker/runtime.py", line 164, in run\n'}}


def test_the_recorder_keeps_the_grader_s_frames_once():
    recorder = Recorder(lambda step, request: FAILED_LOAD)
    for _ in range(3):
        recorder("causal_attention.CausalAttention", {})
    assert recorder.grader_frames == ['causal_attention.CausalAttention (loading the reference weights): LookupError: '
                                      'your module has no parameter named W_query.weight\n'
                                      '  File "/kit/autograder/worker/runtime.py", line 164, in run']
    assert Recorder(lambda step, request: {"ok": True}).grader_frames == []  # control


def test_the_log_keeps_frames_apart_from_the_grader_s_own_failures(tmp_path):
    logged = grader_log.update(tmp_path, ["ann", "bob"], {"ann": [], "bob": ["suite bug"]},
                               {"ann": ["frames of ann"], "bob": []})
    assert logged == {"bob": "suite bug"}  # ann's frames do not make her a submission the grader failed on
    text = (tmp_path / grader_log.NAME).read_text()
    assert "=== ann (calls into the submission) ===\nframes of ann" in text and "=== bob ===\nsuite bug" in text
    # graded again, cleanly: both entries go
    assert grader_log.update(tmp_path, ["ann", "bob"], {"ann": [], "bob": []}, {"ann": [], "bob": []}) == {}
    assert not (tmp_path / grader_log.NAME).exists()


def test_the_scan_finds_a_kit_file_named(tmp_path):
    """Control for the corpus scans: what a student read before names runtime.py, and the scan says so."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "results.json").write_text('{"output": "your code raised LookupError (runtime.py, line 164, in run)"}')
    (tmp_path / "s" / "feedback.html").write_text("<p>causal_attention.py, line 12, in forward</p>")
    assert scan(tmp_path) == {"s/results.json": ["runtime.py"]}
    assert kit_files_named("see autograder/worker/child.py") == ["autograder/worker/child.py"]
    assert kit_files_named("simple_attention.py, line 5, in attention_scores") == []
