"""What a worker says is a claim: the trusted side keeps only what it judges itself (sandbox/answers.py).

Each rule has its control: the same answer without the forged part gives the same verdict, and the judge, given the
forged part directly (as it would have been before), would have been fooled.
"""
from __future__ import annotations

import pytest
import torch

from autograder.feedback.messages import raised
from autograder.feedback.tolerance import Tolerance
from autograder.grading import judge
from autograder.grading.suites import problems
from autograder.sandbox import answers

TOL = Tolerance(1e-4, 1e-5)
STEPS = frozenset({"simple_attention.normalize_sum", "trainable_attention.init_qkv"})
X = torch.tensor([1.0, 2.0, 3.0])
REQUEST = {"kind": "function", "target": "simple_attention.normalize_sum", "args": [X]}
CASE = {"name": "c", "public": True, "request": REQUEST, "judge": "equal", "arg_names": ["scores"]}
EXPECTED = {"ok": True, "output": X / X.sum(), "modified_args": []}


def test_an_answer_keeps_only_what_is_judged():
    forged = {"ok": True, "output": X / X.sum(), "modified_args": [], "args_after": [X], "kind": "limit",
              "tampered": True, "extra": "anything", "backward": "whatever"}
    taken = answers.taken(forged, REQUEST, [0], STEPS)
    assert set(taken) == {"ok", "output", "modified_args"}
    assert taken["modified_args"] == [0]  # the buffer's word, never the worker's
    verdict = judge.judge(CASE, EXPECTED, taken, TOL, True)
    assert not verdict.passed and "modified its input in place (scores)" in verdict.lines[0]
    # control: the worker's own word, had it been taken, hides the change
    assert judge.judge(CASE, EXPECTED, {**forged, "modified_args": []}, TOL, True).passed


def test_an_error_is_the_student_s_own_whatever_it_is_called():
    for name in ("UnreadableSource", "LimitExceeded", "Tampering", "WorkerDied", "MissingModule"):
        forged = {"ok": False, "error": {"type": name, "message": "INPUT 0.737629", "kind": "staging", "limit": "time",
                                         "tampered": True, "import": True, "grader_frames": "File runtime.py"}}
        taken = answers.taken(forged, REQUEST, [], STEPS)
        assert set(taken["error"]) == {"type", "message", "where", "phase", "not_attempted"}
        assert problems.classify(taken["error"]) is None
        assert raised(taken["error"], public=False) == [
            "your code raised an exception of a class defined in your code during the call: INPUT #.######"]
    # control: the same error with the trusted side's kind is said in the kit's words, and is a kind of problem
    trusted = {"type": "LimitExceeded", "message": "out of time", "kind": "limit", "limit": "time"}
    assert problems.classify(trusted) == ("timed_out", "time") and raised(trusted, public=False) == ["out of time"]


def test_what_is_not_an_answer_breaks_the_protocol():
    for forged in (None, [], {"ok": "yes"}, {"output": 1}):
        with pytest.raises(answers.NotAnAnswer):
            answers.taken(forged, REQUEST, [], STEPS)
    assert answers.taken({"ok": False}, REQUEST, [], STEPS)["error"]["type"] == "Exception"  # control: an answer


def test_a_parameter_fact_is_a_note_and_never_a_point():
    request = {"kind": "function", "target": "trainable_attention.init_qkv", "args": [3, 2]}
    case = {"name": "c", "public": True, "request": request, "judge": "equal", "check_parameter_type": True}
    weights = (torch.rand(3, 2),) * 3
    expected = {"ok": True, "output": weights, "output_facts": [{"parameter": True, "requires_grad": False}] * 3}
    plain = answers.taken({"ok": True, "output": weights, "output_facts": [{"parameter": False}] * 3}, request, [],
                          STEPS)
    said = judge.judge(case, expected, plain, TOL, True)
    assert said.passed and len(said.notes) == 3 and "nn.Parameter" in said.notes[0]
    forged = answers.taken({"ok": True, "output": weights, "output_facts": [{"parameter": True}] * 3}, request, [],
                           STEPS)
    assert judge.judge(case, expected, forged, TOL, True).passed  # the same points, whatever the worker says
    wrong = answers.taken({"ok": True, "output": (torch.zeros(3, 2),) * 3, "output_facts": [{"parameter": True}] * 3},
                          request, [], STEPS)
    assert not judge.judge(case, expected, wrong, TOL, True).passed  # control: the values still decide


def test_dropout_s_graph_is_judged_by_the_gradient_it_gives():
    x = torch.softmax(torch.rand(6, 6), -1)
    mask = torch.rand(6, 6) > 0.5
    out = torch.where(mask, x / 0.5, torch.zeros(()))
    up = torch.randn(6, 6)
    request = {"kind": "function", "args": [x, 0.5], "grad_args": [0], "upstream": up}
    case = {"name": "c", "public": True, "request": request, "judge": "dropout", "p": 0.5, "input": x,
            "needs_graph": True}
    right = torch.where(mask, up / 0.5, torch.zeros(()))
    said_whole = {"ok": True, "output": out, "output_facts": {"requires_grad": True}, "modified_args": []}
    assert not judge.judge(case, {}, said_whole, TOL, True).passed  # a graph said whole, no gradient: cut
    assert not judge.judge(case, {}, {**said_whole, "backward": "done", "input_grads": {"0": up}}, TOL, True).passed
    assert judge.judge(case, {}, {**said_whole, "backward": "done", "input_grads": {"0": right}}, TOL, True).passed


def test_a_missing_step_is_named_only_among_the_unit_s_steps():
    missing = {"ok": False, "error": {"type": "MissingStep", "message": "",
                                      "missing": "simple_attention.normalize_sum"}}
    assert answers.taken(missing, REQUEST, [], STEPS)["error"]["missing"] == "simple_attention.normalize_sum"
    forged = {"ok": False, "error": {**missing["error"], "missing": "INPUT 0.73"}}
    assert "missing" not in answers.taken(forged, REQUEST, [], STEPS)["error"]
