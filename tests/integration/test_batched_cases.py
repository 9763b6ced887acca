"""The cases of one count go to the worker as one batch, with each case's own answer and blame.

``runner.plans`` turns the order in which a grading asks for its requests into one plan per count; the runner
sends a count's planned cases in one write (``workers.Worker.batch``), the worker runs them in turn and answers
each as it is done (``child.serve``), stopping after an error answer. A case the count no longer asks for (it
failed at an earlier one) is read and dropped; a worker that runs out of time there is ended, not blamed.
"""
from __future__ import annotations

import os

import pytest
import torch

from autograder.grading.runner import SubmissionRunner, plans
from autograder.sandbox.local_zygote import LocalZygote

STEP = "simple_attention.attention_scores"

SOURCE = """import torch


def attention_scores(inputs, query):
    if inputs.shape[0] == 5:  # a hang on this input only
        while True:
            pass
    if inputs.shape[0] == 4:
        raise ValueError("four rows")
    print("x" * 10)
    return inputs @ query
"""


def _request(rows: int) -> dict:
    return {"target": STEP, "kind": "function", "args": [torch.arange(rows * 2.0).reshape(rows, 2), torch.ones(2)]}


def _runner(tmp_path, zygote, counts: list[list[dict]]) -> SubmissionRunner:
    folder = tmp_path / "sub"
    folder.mkdir(exist_ok=True)
    (folder / "simple_attention.py").write_text(SOURCE)
    sequence = [((STEP, f"count{i}"), r) for i, count in enumerate(counts) for r in count]
    return SubmissionRunner(zygote, folder, ["simple_attention"], {}, {STEP: 3.0}, batches=plans(sequence))


def _sent(runner) -> list[int]:
    """How many calls each write to the worker carried (1: a single request)."""
    counts = []
    batch, request = runner._worker.batch, runner._worker.request

    def counting_batch(requests, deadline=None):
        counts.append(len(requests))
        return batch(requests, deadline)

    def counting_request(message=None, deadline=None):
        if message is not None:
            counts.append(1)
        return request(message, deadline)

    runner._worker.batch, runner._worker.request = counting_batch, counting_request
    return counts


@pytest.mark.unit
def test_plans_are_runs_of_one_count_and_a_request_built_afresh_ends_one():
    a, b, c, d, fresh = ({"n": i} for i in range(5))
    planned = plans([(("s", "x"), a), (("s", "x"), b), (None, fresh), (("s", "x"), c), (("s", "y"), d)])
    assert planned[id(a)] == ([a, b], 0) and planned[id(b)] == ([a, b], 1)
    assert planned[id(c)] == ([c], 0) and planned[id(d)] == ([d], 0) and id(fresh) not in planned


def _one_count(tmp_path, cases: list[dict]) -> tuple[list[int], list[dict]]:
    """Run one count's ``cases`` in turn on a fresh worker: how many calls each write carried, and the answers."""
    with LocalZygote() as zygote:
        runner = _runner(tmp_path, zygote, [cases])
        try:
            runner._begin(STEP)
            sent = _sent(runner)
            return sent, [runner.run(STEP, case) for case in cases]
        finally:
            runner.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked hosts only")
def test_each_case_of_a_batch_gets_its_own_answer_in_one_write(tmp_path):
    cases = [_request(rows) for rows in (1, 2, 3)]
    sent, answers = _one_count(tmp_path, cases)
    assert sent == [3]
    for case, answer in zip(cases, answers):
        assert answer["ok"] is True and torch.equal(answer["output"], case["args"][0] @ case["args"][1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked hosts only")
def test_an_error_ends_the_batch_and_the_count_s_next_cases_are_sent_again(tmp_path):
    cases = [_request(rows) for rows in (1, 4, 2, 3)]
    sent, answers = _one_count(tmp_path, cases)
    assert sent == [4, 2]  # the worker dropped the two after the error: they came again, in one batch
    assert [a["ok"] for a in answers] == [True, False, True, True]
    assert answers[1]["error"]["type"] == "ValueError"
    assert torch.equal(answers[3]["output"], cases[3]["args"][0] @ cases[3]["args"][1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked hosts only")
def test_a_case_that_runs_out_of_time_in_a_batch_is_the_one_blamed(tmp_path):
    cases = [_request(rows) for rows in (1, 2, 5, 3)]
    with LocalZygote() as zygote:
        runner = _runner(tmp_path, zygote, [cases])
        try:
            answers = [runner.run(STEP, case) for case in cases]
        finally:
            runner.close()
    assert [a["ok"] for a in answers[:2]] == [True, True]  # answered before the hang
    assert answers[2]["error"]["limit"] == "time"
    assert answers[3] == answers[2]  # the step is retired, as without batches
    assert STEP in runner.retired


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked hosts only")
def test_a_hang_in_cases_the_count_no_longer_asks_for_blames_nothing(tmp_path):
    """The count stops after its first case (judged failing, say); the batch's third case hangs. The next
    count's case is answered by a fresh worker, and the step is not retired."""
    first = [_request(rows) for rows in (1, 2, 5)]
    second = [_request(3)]
    with LocalZygote() as zygote:
        runner = _runner(tmp_path, zygote, [first, second])
        try:
            one = runner.run(STEP, first[0])
            other = runner.run(STEP, second[0])
        finally:
            runner.close()
    assert one["ok"] is True
    assert other["ok"] is True and torch.equal(other["output"], second[0]["args"][0] @ second[0]["args"][1])
    assert not runner.retired
