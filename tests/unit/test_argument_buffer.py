"""In-place changes are read from the trusted side's own buffer (sandbox/argument_buffer.py), by a real worker.

A step runs in a forked worker of ``grade check``'s own kind (``LocalZygote``: the same host and child as every
level); the trusted side reads its buffer back once the answer is in. The worker's answer is whatever the student's
code makes it: here, code that rewrites every answer's ``args_after`` and ``modified_args`` on its way out changes
nothing, while a step that works on a copy of its input is counted unchanged (the control).
"""
from __future__ import annotations

import mmap
import os
import sys

import pytest
import torch

from autograder.grading.runner import SubmissionRunner
from autograder.sandbox import argument_buffer
from autograder.sandbox.local_zygote import LocalZygote

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a forked worker, Linux")

STEP = "simple_attention.normalize_sum"
FORGE = '''
def _forged(answer):
    if isinstance(answer, dict) and answer.get("ok"):
        answer["modified_args"] = []
        answer["args_after"] = None
    return answer


def _rewrite_every_answer():
    """The worker's own runtime.run, wrapped: every answer says no argument changed."""
    import sys
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "serve":
        frame = frame.f_back
    runtime = frame.f_globals["runtime"]
    if not getattr(runtime.run, "_forged", False):
        real = runtime.run
        def run(*args, **kwargs):
            return _forged(real(*args, **kwargs))
        run._forged = True
        runtime.run = run
'''


def _submission(tmp_path, name: str, body: str, forge: bool):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "simple_attention.py").write_text(
        "import torch\n" + (FORGE if forge else "") + "\n\ndef normalize_sum(scores):\n"
        + ("    _rewrite_every_answer()\n" if forge else "") + body)
    return folder


@pytest.fixture(scope="module")
def zygote():
    with LocalZygote() as made:
        yield made


def _modified(zygote, folder, request) -> list[int]:
    runner = SubmissionRunner(zygote, folder, ["simple_attention"], {}, {STEP: 20.0})
    try:
        first = runner.run(STEP, request)
        second = runner.run(STEP, request)  # the forgery is in place from the first call on
    finally:
        runner.close()
    assert first["ok"] and second["ok"], (first, second)
    return second["modified_args"]


def test_an_in_place_step_is_read_as_modified_whatever_its_worker_says(tmp_path, zygote):
    request = {"kind": "function", "target": STEP, "args": [torch.tensor([1.0, 2.0, 5.0])], "kwargs": {}}
    in_place = "    scores /= scores.sum()\n    return scores\n"
    assert _modified(zygote, _submission(tmp_path, "forged", in_place, forge=True), request) == [0]
    assert _modified(zygote, _submission(tmp_path, "honest", in_place, forge=False), request) == [0]
    on_a_copy = "    scores = scores.clone()\n    scores /= scores.sum()\n    return scores\n"
    assert _modified(zygote, _submission(tmp_path, "on_a_copy", on_a_copy, forge=False), request) == []  # control


def test_the_buffer_holds_each_argument_in_place_and_reads_its_changes_back():
    x, y = torch.arange(6.0).reshape(2, 3), torch.tensor([1, 2], dtype=torch.int64)
    call = argument_buffer.outgoing({"kind": "function", "target": STEP, "args": [x, 3, y]})
    assert [slot[0] for slot in call.slots] == [0, 2] and all(slot[1] % argument_buffer.ALIGN == 0
                                                              for slot in call.slots)
    handed = argument_buffer.Handed(call)
    memory = mmap.mmap(os.dup(handed.fd), len(call.data))
    view = torch.frombuffer(memory, dtype=torch.int64, count=2, offset=call.slots[1][1])
    view.add_(1)  # the student's code, through the worker's view of the buffer
    del view
    memory.close()
    assert handed.modified() == [2]
    untouched = argument_buffer.Handed(call)
    assert untouched.modified() == []  # control: a buffer nothing wrote to
    nan = argument_buffer.outgoing({"kind": "function", "target": STEP, "args": [torch.tensor([float("nan"), -0.0])]})
    assert argument_buffer._same_values(nan.data, torch.tensor([float("-nan"), 0.0]).numpy().tobytes(), torch.float32,
                                        (2,))
