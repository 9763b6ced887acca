"""A submission that sets a signal handler gets the same verdict and the same words on every platform.

On x86_64 Linux the worker's seccomp filter refuses ``rt_sigaction`` (``[Errno 1] Operation not permitted``); on
macOS, Windows and ARM there is no filter, so ``grade check`` there let the call through and passed a submission that
``grade autograde`` fails. ``signal.signal`` now raises the same ``PermissionError`` in every worker, naming the limit
(``autograder/worker/signal_handlers_refused.py``). A machine without the filter is played here by switching the
filter off in the forked workers of ``grade check``'s own zygote.
"""
from __future__ import annotations

import os

import pytest
import torch

from autograder.feedback.messages import raised
from autograder.grading.runner import SubmissionRunner
from autograder.sandbox.local_zygote import LocalZygote
from autograder.worker import seccomp, signal_handlers_refused

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers only: the filter is switched off in them")

SOURCE = """import signal

import torch

signal.signal(signal.SIGALRM, lambda *a: None)


def attention_scores(inputs, query):
    return inputs @ query
"""


def _answer(tmp_path) -> dict:
    folder = tmp_path / "sub"
    folder.mkdir(parents=True)
    (folder / "simple_attention.py").write_text(SOURCE)
    with LocalZygote() as zygote:
        runner = SubmissionRunner(zygote, folder, ["simple_attention"], {}, {"simple_attention.attention_scores": 10.0})
        try:
            return runner.run("simple_attention.attention_scores",
                              {"target": "simple_attention.attention_scores", "kind": "function",
                               "args": [torch.ones(3, 2), torch.ones(2)]})
        finally:
            runner.close()


def _words(answer: dict) -> str:
    assert answer["ok"] is False, answer
    return " ".join(raised(answer["error"], public=False))


@pytest.fixture(params=["filter", "no filter"])
def machine(request, monkeypatch):
    """This machine as it is, and as one where no seccomp filter can be installed (macOS, Windows, ARM)."""
    if request.param == "no filter":
        monkeypatch.setattr(seccomp, "no_signal_handlers", lambda: False)
    return request.param


def test_a_signal_handler_is_refused_in_words_with_or_without_the_filter(tmp_path, machine):
    words = _words(_answer(tmp_path))
    assert "PermissionError" in words and "simple_attention.py, line 5" in words, words
    assert signal_handlers_refused.MESSAGE in words, words
    assert "Operation not permitted" not in words, words


def test_control_without_the_words_the_filter_alone_decides(tmp_path, monkeypatch):
    """The control: with neither the words nor the filter, the call goes through and the step is answered (what
    ``grade check`` did on macOS); with the filter alone, the kernel's bare words."""
    monkeypatch.setattr(signal_handlers_refused, "install", lambda: None)
    if seccomp.supported():
        words = _words(_answer(tmp_path / "filter"))
        assert "Operation not permitted" in words and signal_handlers_refused.MESSAGE not in words, words
    monkeypatch.setattr(seccomp, "no_signal_handlers", lambda: False)
    answer = _answer(tmp_path / "none")
    assert answer["ok"] is True, answer
