"""A step that runs out of time says where the student's code was.

Before any student code runs, the worker registers ``faulthandler`` on SIGUSR2, writing into a file of its
own (``child.py``); when a step's time runs out, the trusted side has the host send SIGUSR2, waits briefly
for the dump, then kills the worker as before (``workers.Worker.where``). The student reads the innermost
frame of their own files; a student who replaced the handler gets no location, never a wrong one.
"""
from __future__ import annotations

import os

import pytest
import torch

from autograder.feedback.messages import raised
from autograder.grading.runner import SubmissionRunner
from autograder.sandbox import host
from autograder.sandbox.host import stopped_at, time_limit_hit
from autograder.sandbox.local_zygote import LocalZygote

LOOP = """import torch


def _spin(n):
    while True: n += 1  # noqa: E701 - one line: the dump names it wherever the loop is


def attention_scores(inputs, query):
    return _spin(0)
"""


def _timed_out(tmp_path, source: str) -> list[str]:
    """Run attention_scores of a one-file submission with a 2 s step limit, in the real sandbox: the words."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "simple_attention.py").write_text(source)
    with LocalZygote() as zygote:
        runner = SubmissionRunner(zygote, folder, ["simple_attention"], {}, {"simple_attention.attention_scores": 2.0})
        try:
            answer = runner.run("simple_attention.attention_scores",
                                {"target": "simple_attention.attention_scores", "kind": "function",
                                 "args": [torch.ones(3, 2), torch.ones(2)]})
        finally:
            runner.close()
    assert answer["ok"] is False and answer["error"]["limit"] == "time"
    return raised(answer["error"], public=False)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked hosts only")
def test_an_endless_loop_is_named_where_it_was_stopped(tmp_path, monkeypatch):
    # the dump is waited for until it is whole (it stops growing), however late a loaded machine runs the worker
    monkeypatch.setattr(host, "DUMP_WAIT", 60.0)
    words = _timed_out(tmp_path, LOOP)
    assert words == ["the time limit of 2 s for this step was hit: your code was at simple_attention.py, line 5, "
                     "in _spin when it was stopped (an endless loop, or far more work than the step needs?)"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked hosts only")
def test_control_a_replaced_handler_names_no_place(tmp_path):
    """The student's code takes SIGUSR2 for itself: nothing is dumped, and no place is said (where the code was is
    feedback only; its time limit is the trusted side's own deadline, whatever the worker does with its signals)."""
    words = _timed_out(tmp_path, "import _signal\ntry:\n    _signal.signal(_signal.SIGUSR2, lambda *a: None)\n"
                                 "except OSError:\n    pass\n" + LOOP)
    assert words == ["the time limit of 2 s for this step was hit: your code was still running when it was "
                     "stopped (an endless loop, or far more work than the step needs?)"]


DUMP = """folder: /sub/alice
Thread 0x00007f0000000002 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/sub/alice/helpers.py", line 3 in worker_loop

Current thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1520 in _call_impl
  File "/sub/alice/causal_attention.py", line 12 in forward
  File "/kit/autograder/worker/runtime.py", line 143 in run
  File "/kit/autograder/worker/child.py", line 60 in serve
  File "/kit/autograder/worker/host.py", line 70 in run
"""


@pytest.mark.unit
def test_the_step_thread_s_innermost_frame_of_the_student_s_files_is_named():
    assert stopped_at(DUMP) == "causal_attention.py, line 12, in forward"
    assert "your code was at causal_attention.py, line 12, in forward when it was stopped" in time_limit_hit(
        20, stopped_at(DUMP))


@pytest.mark.unit
def test_control_no_frame_of_the_student_s_or_no_dump_names_nothing():
    assert stopped_at(DUMP.replace("/sub/alice/causal_attention.py", "/elsewhere/causal_attention.py")) is None
    assert stopped_at("folder: /sub/alice\n") is None  # the handler was replaced: nothing was written
    assert stopped_at("") is None
    assert "your code was still running when it was stopped" in time_limit_hit(20, None)
