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
from autograder.grading.runner import in_trusted_words
from autograder.sandbox import answers
from autograder.worker import runtime
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


LIMITS = {"memory_mb": 3072, "processes": 32, "output_mb": 4}


def trusted(answer: dict, request: dict, printed: int = 0, not_imported=frozenset()) -> dict:
    """The error as the trusted side says it: taken from the worker's answer (sandbox/answers.py), in its own words
    where it has some (grading/runner.py)."""
    taken = answers.taken(answer, request, [], frozenset({"ca.Attention", "sa.scores"}))
    return in_trusted_words(taken["error"], LIMITS, set(not_imported), printed)


def module_request(**extra) -> dict:
    return {"target": "ca.Attention", "kind": "module", "init_args": [3, 2], "want_params": False,
            "forward_args": [torch.ones(1, 2, 3)], **extra}


def test_loading_the_reference_weights_says_what_the_grader_expected(tmp_path):
    ws = submission(tmp_path, "ca", MODULE)
    request = module_request(load_params={"W_query.weight": torch.zeros(2, 3)})
    words = raised(trusted(runtime.run(request, ws), request), public=False)
    assert words == ["loading the reference weights into your module failed: "
                     "your module has no parameter named W_query.weight"]
    assert not names_a_kit_file("\n".join(words))


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


def test_the_output_limit_is_named_with_its_value_and_where_the_code_was(tmp_path):
    """A write refused at the output limit: the limit's words for the student, from the course's value; a kind of
    problem only where the trusted side measured the printed output at the limit."""
    source = ("import errno\ndef scores(x):\n    raise OSError(errno.EFBIG, 'File too large')\n")
    ws = submission(tmp_path, "sa", source)
    request = {"target": "sa.scores", "kind": "function", "args": [1]}
    said = trusted(runtime.run(request, ws), request)
    assert "kind" not in said
    assert raised(said) == [
        "the output limit of 4 MB was hit: your code printed or wrote more than the output limit allows "
        "(sa.py, line 3, in scores)"]
    measured = trusted(runtime.run(request, ws), request, printed=4 * 2**20)
    assert measured["kind"] == "limit" and measured["limit"] == "output"


def test_control_another_oserror_is_the_students_own(tmp_path):
    ws = submission(tmp_path, "sa", "def scores(x):\n    raise OSError(errno_value, 'No such file')\nerrno_value = 2\n")
    request = {"target": "sa.scores", "kind": "function", "args": [1]}
    words = raised(trusted(runtime.run(request, ws), request))
    assert words[0] == "your code raised FileNotFoundError (sa.py, line 2, in scores) during call: [Errno 2] No such file"


@pytest.mark.parametrize("exc, limit", [(MemoryError(), "memory"),
                                        (BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable"), "processes")])
def test_memory_and_process_limits_are_named(exc, limit):
    found = in_trusted_words({"type": type(exc).__name__, "message": str(exc)}, LIMITS, set(), 0)
    assert "kind" not in found  # a hint for the student: the worker's word is no kind of problem
    assert found["hint"] == {
        "memory": "the memory limit of 3,072 MB was hit: your code asked for more memory than the memory limit allows",
        "processes": "the process limit of 32 processes was hit: your code started more processes or threads than "
                     "the process limit allows"}[limit]


def test_an_unreadable_notebook_is_said_as_what_it_is():
    """Staging's own finding (its ``kind``) is said whole; the same type name from a worker is the student's, redacted
    on a hidden count like any other of their errors."""
    error = {"type": "MalformedNotebook", "phase": "importing simple_attention.py", "where": None, "kind": "staging",
             "message": "simple_attention.ipynb is not a valid notebook: its JSON is broken at line 3, column 1"}
    assert raised(error, public=False) == [
        "simple_attention.ipynb is not a valid notebook: its JSON is broken at line 3, column 1"]
    from_a_worker = answers.student_error({**error, "message": "INPUT 0.737629"})
    assert raised(from_a_worker, public=False) == [
        "your code raised an exception of a class defined in your code during the call: INPUT #.######"]


def test_a_missing_step_names_the_file_and_the_name(tmp_path):
    ws = submission(tmp_path, "ca", "x = 1\n")
    request = module_request()
    answer = runtime.run(request, ws)
    assert answer["error"]["missing"] == "ca.Attention"
    assert raised(trusted(answer, request), public=False)[0].startswith("ca.py defines no Attention")
    # control: a name outside the unit's steps is not taken as missing: the error is the student's own
    forged = {"ok": False, "error": {**answer["error"], "missing": "/etc/passwd.x", "type": "MissingStep"}}
    assert "missing" not in trusted(forged, request)
