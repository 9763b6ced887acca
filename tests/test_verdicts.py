"""Issue 21, fast pieces: a second call on one instance, assert as well as ValueError, grade check's intake and
output limit in autograde's words. Each test has its control (the same check without the change fails)."""
from __future__ import annotations

import torch
import pytest

from autograder.check import intake
from autograder.grading import judge as judges
from autograder.grading.runner import _said_as_limit, output_limit
from autograder.intake.stage import copy_modules
from autograder.worker import runtime

pytestmark = pytest.mark.unit


class CachesKeys(torch.nn.Module):
    """Right on its first call only: keys kept from the first call."""

    def __init__(self):
        super().__init__()
        self.W = torch.nn.Linear(3, 3, bias=False)
        self.keys = None

    def forward(self, x):
        if self.keys is None:
            self.keys = self.W(x)
        return x @ self.keys.transpose(-1, -2)


class Honest(CachesKeys):
    def forward(self, x):
        return x @ self.W(x).transpose(-1, -2)


def _run(cls, before):
    ws = runtime.Workspace(None, {}, {"m.M": cls})
    request = {"kind": "module", "target": "m.M", "init_args": [], "seed": 1, "standin": True,
               "forward_args": [torch.ones(1, 4, 3)], "want_params": False}
    if before:
        request["calls_before"] = [{"args": [torch.rand(1, 6, 3)], "train": True}]
    return runtime.run(request, ws)


def test_state_kept_between_calls_shows_on_the_judged_call():
    honest = _run(Honest, before=True)["output"]
    assert torch.equal(_run(Honest, before=False)["output"], honest)  # an honest module: the call before changes nothing
    cached = _run(CachesKeys, before=True)
    assert not cached["ok"] or not torch.equal(cached["output"], honest)
    # control: with one call only, the caching module is indistinguishable from the honest one
    assert torch.equal(_run(CachesKeys, before=False)["output"], honest)


def _raised(kind):
    return {"ok": False, "error": {"type": kind, "message": "", "phase": "__init__"}}


def test_the_books_assert_is_accepted_where_the_case_says_so():
    case = {"judge": "raises", "exception": "ValueError", "also_accepted": ["AssertionError"]}
    assert judges.judge_raises(case, {}, _raised("AssertionError"), None, True).passed
    assert judges.judge_raises(case, {}, _raised("ValueError"), None, True).passed
    assert not judges.judge_raises(case, {}, _raised("TypeError"), None, True).passed
    # control: a case without also_accepted refuses AssertionError
    assert not judges.judge_raises({**case, "also_accepted": []}, {}, _raised("AssertionError"), None, True).passed


def test_grade_check_refuses_a_latin1_file_in_autogrades_words(tmp_path):
    (tmp_path / "simple_attention.py").write_bytes(b"import torch\n")
    (tmp_path / "causal_attention.py").write_bytes("# r\xe9sum\xe9 of the mask\nimport torch\n".encode("latin-1"))
    mine = intake.module_errors(tmp_path, ["simple_attention", "causal_attention"])
    staged = copy_modules(tmp_path, tmp_path / "staged", ["simple_attention", "causal_attention"])
    assert list(mine) == ["causal_attention"]
    assert mine["causal_attention"]["message"] == staged.module_errors["causal_attention"]["message"]
    assert "not UTF-8" in mine["causal_attention"]["message"]


def test_a_refused_write_reads_as_the_output_limit():
    flood = {"ok": False, "error": {"type": "OSError", "message": "[Errno 27] File too large", "phase": "call",
                                    "where": None, "not_attempted": False}}
    said = _said_as_limit(flood)["error"]
    assert said["type"] == "LimitExceeded" and said["limit"] == "output" and "output-size limit" in said["message"]
    assert output_limit(flood["error"])["limit"] == "output"
    # control: the student's own OSError stays theirs
    other = {"ok": False, "error": {**flood["error"], "message": "[Errno 2] No such file or directory"}}
    assert _said_as_limit(other) == other
