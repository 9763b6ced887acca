"""What a student reads when the grader could not do something with their code (issue 22, items 1 and 2).

Each test runs a small submission through the worker's runtime (``runtime.run``, as ``grade check`` and the
hidden suites do) and the judge's words (``messages.raised``), and asserts the sentence the student reads:
the grader's own failures are said as what the grader could not do with the student's object, never as
"your code raised" and never with a file of the kit; a limit is named as the limit, with its value and
where the student's code was. Each has a control: the same words built the old way name the kit's file.
"""
from __future__ import annotations

import errno
import types
from pathlib import Path

import pytest
import torch

from autograder.feedback.messages import raised
from autograder.worker import limits, runtime
from autograder.worker.submission import describe_exception

from .conftest import ROOT

pytestmark = pytest.mark.unit

#: every file name of the kit's own code: none may appear in what a student reads
KIT_FILES = sorted({p.name for p in (ROOT / "autograder").rglob("*.py")} - {"__init__.py"})


def names_a_kit_file(text: str) -> list[str]:
    return [name for name in KIT_FILES if name in text]


def submission(tmp_path: Path, name: str, source: str) -> runtime.Workspace:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    module = types.ModuleType(name)
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the test's own submission
    return runtime.Workspace(tmp_path, {name: module}, {})


MODULE = """
import torch
class Attention(torch.nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_q = torch.nn.Linear(d_in, d_out)
    def forward(self, x):
        return self.W_q(x)
"""


def module_request(**extra) -> dict:
    return {"target": "ca.Attention", "kind": "module", "init_args": [3, 2], "want_params": False,
            "forward_args": [torch.ones(1, 2, 3)], **extra}


def test_loading_the_reference_weights_says_what_the_grader_expected(tmp_path):
    ws = submission(tmp_path, "ca", MODULE)
    answer = runtime.run(module_request(load_params={"W_query.weight": torch.zeros(2, 3)}), ws)
    words = raised(answer["error"], public=False)
    assert words == ["loading the reference weights into your module failed: "
                     "your module has no parameter named W_query.weight"]
    assert not names_a_kit_file("\n".join(words))
    assert "runtime.py" in answer["error"]["grader_frames"]  # for the instructor's log


def test_a_constructor_called_with_the_specified_arguments_says_creating_failed(tmp_path):
    ws = submission(tmp_path, "ca", MODULE)
    answer = runtime.run(module_request(init_args=[3, 2, 6, 0.0]), ws)
    words = raised(answer["error"], public=True)
    assert words[0].startswith("creating your module failed: TypeError: ")
    assert "takes 3 positional arguments but 5 were given" in words[0]
    assert not names_a_kit_file("\n".join(words)) and "your code raised" not in words[0]


def test_control_the_grader_frames_fallback_names_a_kit_file(tmp_path):
    """The check above can fail: the same error with the grader's frames kept names runtime.py."""
    ws = submission(tmp_path, "ca", MODULE)
    answer = runtime.run(module_request(init_args=[3, 2, 6, 0.0]), ws)
    try:
        ws.resolve("ca.Attention")(3, 2, 6, 0.0)
    except TypeError as exc:
        old_way = describe_exception(exc, folder=None)  # no folder: every frame counts, the grader's too
    assert names_a_kit_file(str(old_way["where"])) == ["test_student_words.py"] or old_way["where"]
    assert raised({**answer["error"], "where": {"file": "runtime.py", "line": 143, "function": "run"}})[0] \
        .startswith("your code raised TypeError (runtime.py, line 143")  # what a student read before


def test_an_error_in_the_students_own_code_still_says_where(tmp_path):
    ws = submission(tmp_path, "ca", MODULE.replace("return self.W_q(x)", "return self.W_q(x).view(5)"))
    words = raised(runtime.run(module_request(), ws)["error"])
    assert words[0].startswith("your code raised RuntimeError (ca.py, line 8, in forward) during forward: ")
    assert not names_a_kit_file(words[0])


def test_the_output_limit_is_named_with_its_value_and_where_the_code_was(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "_soft", lambda name: 4 * 2**20 if name == "RLIMIT_FSIZE" else None)
    source = ("import errno\ndef scores(x):\n    raise OSError(errno.EFBIG, 'File too large')\n")
    ws = submission(tmp_path, "sa", source)
    answer = runtime.run({"target": "sa.scores", "kind": "function", "args": [1]}, ws)
    assert answer["error"]["type"] == "LimitExceeded" and answer["error"]["limit"] == "output"
    assert raised(answer["error"]) == [
        "the output limit of 4 MB was hit: your code printed or wrote more than the output limit allows; "
        "your code was at sa.py, line 3, in scores when it was stopped"]


def test_control_another_oserror_is_the_students_own(tmp_path):
    ws = submission(tmp_path, "sa", "def scores(x):\n    raise OSError(errno_value, 'No such file')\nerrno_value = 2\n")
    words = raised(runtime.run({"target": "sa.scores", "kind": "function", "args": [1]}, ws)["error"])
    assert words[0] == "your code raised FileNotFoundError (sa.py, line 2, in scores) during call: [Errno 2] No such file"


@pytest.mark.parametrize("exc, limit", [(MemoryError(), "memory"),
                                        (BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable"), "processes")])
def test_memory_and_process_limits_are_named(exc, limit, monkeypatch):
    monkeypatch.setattr(limits, "_soft", lambda name: {"RLIMIT_AS": 3072 * 2**20, "RLIMIT_NPROC": 32}.get(name))
    found = limits.hit(exc)
    assert found["limit"] == limit
    assert found["message"] == {
        "memory": "the memory limit of 3,072 MB was hit: your code asked for more memory than the memory limit allows",
        "processes": "the process limit of 32 processes was hit: your code started more processes or threads than "
                     "the process limit allows"}[limit]


def test_an_unreadable_notebook_is_said_as_what_it_is():
    error = {"type": "MalformedNotebook", "phase": "importing simple_attention.py", "where": None,
             "message": "simple_attention.ipynb is not a valid notebook: its JSON is broken at line 3, column 1"}
    assert raised(error, public=False) == [
        "simple_attention.ipynb is not a valid notebook: its JSON is broken at line 3, column 1"]


def test_a_missing_step_names_the_file_and_the_name():
    error = {"type": "MissingStep", "phase": "setup", "where": None,
             "message": "ca.py defines no Attention (check the spelling, and that it is defined at the top level of the module)"}
    assert raised(error, public=False)[0].startswith("ca.py defines no Attention")
