"""A worker that fails in the grader's own start is the grader's fault, never the student's.

Each fresh worker says ``{"started": True}`` once it is confined and before it imports the submission
(``worker/child.py``): nothing of the student's has run in it yet. A worker that ends before saying so failed in the
grader's own code (its confinement, its checks), and the trusted side raises ``GraderFault`` (the plugin turns it
into "the grader itself failed on this count, not your code", and the traceback into grader_errors.log). Before,
the worker ended with status 0 and the student read "your code ended the worker process (exit 0: sys.exit, os._exit
or similar)".
"""
from __future__ import annotations

import os

import pytest
import torch

from autograder.grading.runner import GraderFault, SubmissionRunner
from autograder.sandbox.host import WorkerError
from autograder.sandbox.local_zygote import LocalZygote

CORRECT = """import torch


def attention_scores(inputs, query):
    return inputs @ query
"""

REQUEST = {"target": "simple_attention.attention_scores", "kind": "function",
           "args": [torch.ones(3, 2), torch.ones(2)]}


def _run(tmp_path, limits: dict, source: str = CORRECT):
    folder = tmp_path / "sub"
    folder.mkdir(exist_ok=True)
    (folder / "simple_attention.py").write_text(source)
    with LocalZygote() as zygote:
        runner = SubmissionRunner(zygote, folder, ["simple_attention"], {}, {"simple_attention.attention_scores": 10.0},
                                  limits)
        try:
            return runner.run("simple_attention.attention_scores", REQUEST)
        finally:
            runner.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked hosts only")
def test_a_worker_that_fails_while_the_grader_confines_it_is_the_grader_s_fault(tmp_path):
    # a memory limit the worker cannot set: its confinement (confine.confine_step) raises before any student code
    with pytest.raises(GraderFault, match="before the submission was imported"):
        _run(tmp_path, {"memory_mb": "lots"})


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked hosts only")
def test_control_the_same_submission_with_limits_the_worker_can_set_is_graded(tmp_path):
    answer = _run(tmp_path, {"memory_mb": 2048})
    assert answer["ok"] is True and torch.equal(answer["output"], torch.full((3,), 2.0))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked hosts only")
def test_control_a_submission_that_ends_its_worker_on_import_is_still_its_own_fault(tmp_path):
    """Student code that ends the process as it is imported: after the first word, so the student's to read."""
    answer = _run(tmp_path, {}, "import os\nos._exit(0)\n" + CORRECT)
    assert answer["ok"] is False and "your code ended the worker process" in answer["error"]["message"]


class _Unstarted:
    """A worker that never says its first word: it raises ``error`` when read."""

    def __init__(self, error: WorkerError):
        self.error, self.killed = error, False

    def request(self):
        raise self.error

    def kill(self):
        self.killed = True


@pytest.mark.unit
def test_a_worker_out_of_time_before_its_first_word_is_said_as_the_time_limit():
    """The submission's total time can run out between two steps: that is the time limit, said as before (and the
    step retired), not a fault of the grader's; a worker that dies there is the grader's."""
    runner = object.__new__(SubmissionRunner)
    runner._worker = _Unstarted(WorkerError("the time limit of 0.01 s for this step was hit", limit="time"))
    with pytest.raises(WorkerError) as raised:
        runner._started()
    assert raised.type is WorkerError and raised.value.limit == "time"
    runner._worker = _Unstarted(WorkerError("the worker process died (signal SIGABRT)"))
    with pytest.raises(GraderFault, match="before the submission was imported: the worker process died"):
        runner._started()
    assert runner._worker.killed
