"""Fast pieces of what grade check and grade autograde agree on: a second call on one instance, assert as well as
ValueError, grade check's intake and output limit in autograde's words. Each test has its control (the same check
without the change fails)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import torch
import pytest

from autograder.check import intake
from autograder.outputs.outcomes import CountOutcome, StepOutcome
from autograder.check import checking
from autograder.grading import judge as judges
from autograder.grading.runner import limit_hint
from autograder.intake.stage import copy_modules
from autograder.worker import limits, runtime

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
    # an honest module: the call before changes nothing
    assert torch.equal(_run(Honest, before=False)["output"], honest)
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


def test_an_error_python_raises_at_a_limit_gets_the_limit_s_words_as_a_hint_only():
    """A student's OSError [Errno 27] (a write past the output limit) is said with the limit's sentence, the course's
    value in it: a hint for that student, never a kind of problem (that needs the trusted side's own measure)."""
    limits_ = {"memory_mb": 3072, "output_mb": 4, "processes": 32}
    flood = {"type": "OSError", "message": "[Errno 27] File too large"}
    assert limit_hint(flood, limits_) == ("the output limit of 4 MB was hit: your code printed or wrote more than the "
                                          "output limit allows")
    assert limit_hint({"type": "MemoryError", "message": ""}, limits_).startswith(
        "the memory limit of 3,072 MB was hit")
    assert "kind" not in flood
    # control: the student's own OSError stays theirs
    assert limit_hint({"type": "OSError", "message": "[Errno 2] No such file or directory"}, limits_) is None


# ---- grade check names, once at the end, a limit this machine cannot apply ------------------------------------

LIMITS = {"memory_mb": 3072, "processes": 32, "output_mb": 4, "submission_seconds": 300.0}


def _grade_check(monkeypatch, capsys, tmp_path, as_json=False):
    """``grade check`` in process, on two checked steps (the run itself stood in for: this is about its ending)."""
    (tmp_path / "simple_attention.py").write_text("import torch\n")
    data = {"modules": ["simple_attention"], "limits": dict(LIMITS),
            "steps": {"simple_attention.attention_scores": {}, "simple_attention.normalize_sum": {}}}
    results = [StepOutcome(step, "a step", (CountOutcome(step, "values", points=1.0, max_points=1.0),))
               for step in data["steps"]]
    monkeypatch.setattr(checking, "run", lambda *args, **kwargs: results)
    code = checking.terminal_check(tmp_path, (), data, as_json, False, None)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_grade_check_says_once_at_the_end_which_limit_it_could_not_apply(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(limits, "sys", SimpleNamespace(platform="darwin"))  # macOS: RLIMIT_AS not enforced
    code, out, _err = _grade_check(monkeypatch, capsys, tmp_path)
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 0  # a note, not a failure
    assert lines[-1].startswith("not applied by grade check on this machine: the memory limit of 3,072 MB")
    assert out.count("not applied by grade check") == 1 and "output limit" not in out
    assert "grade autograde applies it" in lines[-1]
    # the same words autograde uses when the limit is hit
    assert limits.sentence("memory", " of 3,072 MB").startswith("the memory limit of 3,072 MB")


def test_without_rlimits_both_limits_are_named_in_one_line_and_json_stays_json(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(limits, "resource", None)  # Windows: no resource module at all
    _code, out, _err = _grade_check(monkeypatch, capsys, tmp_path)
    said = [line for line in out.splitlines() if line.startswith("not applied by grade check")]
    assert said == ["not applied by grade check on this machine: the memory limit of 3,072 MB and the output limit of "
                    "4 MB (this system has no resource limits, as on Windows); grade autograde applies them, so code "
                    "that passes here can still hit them there."]
    _code, out, err = _grade_check(monkeypatch, capsys, tmp_path, as_json=True)
    assert json.loads(out)["score"] == 2  # the note goes to standard error, the JSON stays whole
    assert err.count("not applied by grade check") == 1


def test_where_every_limit_applies_grade_check_says_nothing_of_limits(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(limits, "sys", SimpleNamespace(platform="linux"))
    if limits.resource is None or not all(hasattr(limits.resource, r) for r in limits.RLIMIT_OF.values()):
        pytest.skip("this machine has no rlimits")
    code, out, err = _grade_check(monkeypatch, capsys, tmp_path)
    assert code == 0 and "public checks" in out  # the control ran the same command to its end
    assert "not applied" not in out + err and "limit" not in out + err
