"""What a student reads: what the grader could not do with their code, their own warnings, their own names.

Each test runs a small submission through the worker's runtime (``runtime.run``, as ``grade check`` and the
hidden suites do) and the judge's words (``messages.raised``), and asserts the sentence the student reads:
the grader's own failures are said as what the grader could not do with the student's object, never as
"your code raised" and never with a file of the kit; a limit is named as the limit, with its value and
where the student's code was; Python's and torch's warnings about the student's lines are data, said once at
their line (never as printed output); a hidden count names the student's own classes, functions and shapes, and
masks the rest; one cause is said in one line. Each has a control.
"""
from __future__ import annotations

import errno
import types
from pathlib import Path

import pytest
import torch

from autograder.feedback.compare import compare_values
from autograder.feedback.messages import raised
from autograder.feedback.redact import Hidden, names_in_source, sizes_of
from autograder.feedback.tolerance import Tolerance
from autograder.feedback.warned import unsaid, warning_lines
from autograder.grading.own_source import OwnSource
from autograder.grading.runner import in_trusted_words
from autograder.sandbox import answers
from autograder.worker import runtime, warnings_seen
from autograder.worker.submission import describe_exception

from .conftest import ROOT

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
    assert words[0] == ("your code raised FileNotFoundError (sa.py, line 2, in scores) during call: [Errno 2] "
                        "No such file")


@pytest.mark.parametrize("exc, limit", [(MemoryError(), "memory"),
                                        (BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable"),
                                         "processes")])
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


# -- the student's own warnings: data, shown once, at their line ----------------------------------------------------
BATCH_T = """
import sys, torch
def scores(queries, keys):
    print("printed by the student", file=sys.stderr)
    return queries @ keys.T
"""


def test_a_warning_about_the_students_line_is_data_never_printed_output(tmp_path, capfd):
    """torch's x.T warning while a request runs: in the answer (file, line, category, message), not on stderr, where
    what the student's code prints goes (the control: it is there)."""
    ws = submission(tmp_path, "sa", BATCH_T)
    request = {"target": "sa.scores", "kind": "function", "args": [torch.ones(2, 6, 3), torch.ones(2, 6, 3)]}
    answer = runtime.run(request, ws)
    assert answer["ok"] is False
    assert capfd.readouterr().err == "printed by the student\n"
    [warned] = answer["warnings"]
    assert (warned["file"], warned["line"], warned["category"]) == ("sa.py", 5, "UserWarning")
    assert "The use of `x.T` on tensors of dimension other than 2" in warned["message"]


def test_a_syntax_warning_of_compiling_the_students_file_is_collected(tmp_path):
    """What importing a module compiles: Python's SyntaxWarning about an assert on a tuple, kept for its file; control:
    a file outside the submission's folder is not the student's."""

    source = "def f(d):\n    assert (d % 2 == 0, 'even')\n"
    (tmp_path / "mha.py").write_text(source)
    with warnings_seen.collecting(tmp_path) as seen:
        compile(source, str(tmp_path / "mha.py"), "exec")
        compile(source, str(tmp_path.parent / "elsewhere.py"), "exec")
    assert seen == [{"file": "mha.py", "line": 2, "category": "SyntaxWarning",
                     "message": "assertion is always true, perhaps remove parentheses?"}]


def test_the_trusted_side_says_a_warning_only_at_a_line_of_the_students_own_files(tmp_path):

    (tmp_path / "mha.py").write_text("import torch\nclass MHA:\n    def __init__(self, d):\n        assert (d, 'x')\n")
    own = OwnSource(tmp_path, ["mha"])
    claimed = answers.warnings_said([
        {"file": "mha.py", "line": 4, "category": "SyntaxWarning", "message": "assertion is always true",
         "text": "forged text"},
        {"file": "mha.py", "line": 40, "category": "UserWarning", "message": "no such line"},
        {"file": "runtime.py", "line": 1, "category": "UserWarning", "message": "not the student's file"},
        {"file": "../etc/passwd", "line": 1, "category": "UserWarning", "message": "not a module"}])
    kept = own.verified(claimed)
    assert kept == [{"file": "mha.py", "line": 4, "category": "SyntaxWarning", "message": "assertion is always true",
                     "text": "assert (d, 'x')"}]  # the line as the trusted side read it, never the worker's text
    own.import_warnings = kept
    assert own.for_step("mha.MHA") == kept and own.for_step("mha.other") == []  # control: another step's lines


def test_each_warning_is_said_once_in_a_submission():

    seen = [{"file": "mha.py", "line": 4, "category": "SyntaxWarning", "message": "assertion is always true",
             "text": "assert (d, 'x')"}]
    said: dict = {}
    lines = warning_lines(seen, True)
    assert lines == ["warning about your code: mha.py, line 4: SyntaxWarning: assertion is always true",
                     "    assert (d, 'x')"]
    assert unsaid(lines, said) == lines and unsaid(lines, said) == []  # said once
    assert unsaid(lines, {}) == lines  # control: another submission says it again


def test_a_warning_on_a_hidden_count_is_redacted_as_the_students_text():

    seen = [{"file": "sa.py", "line": 3, "category": "LeakWarning", "message": "x = 0.737629", "text": "warn(x)"}]
    assert warning_lines(seen, Hidden(names={"warn"}))[0] == (
        "warning about your code: sa.py, line 3: a warning of a class defined in your code: x = #.######")
    assert warning_lines(seen, True)[0].endswith("LeakWarning: x = 0.737629")  # control: a public count


# -- hidden counts: the student's own names and shape, never a hidden value -----------------------------------------
def test_a_hidden_count_names_the_students_own_classes_and_functions():

    names = names_in_source("class MultiHeadAttentionWrapper:\n"
                            "    def causal_attention_weights(self, x2):\n        pass\n")
    error = {"type": "TypeError", "phase": "__init__", "where": {"file": "mha.py", "line": 20,
                                                                 "function": "causal_attention_weights"},
             "message": "MultiHeadAttentionWrapper.__init__() got an unexpected keyword argument 'qkv_bias' (x2=0.25)"}
    assert raised(error, Hidden(names)) == [
        "your code raised TypeError (mha.py, line 20, in causal_attention_weights) during __init__: "
        "MultiHeadAttentionWrapper.__init__() got an unexpected keyword argument 'qkv_bias' (x2=#.##)"]
    assert raised(error, False) == [  # control: without the student's names, they are masked as any token
        "your code raised TypeError (mha.py, line 20, in …) during __init__: ….__init__() got an unexpected keyword "
        "argument 'qkv_bias' (x#=#.##)"]


def test_a_hidden_count_shows_the_students_own_shape_from_the_cases_sizes():

    tol = Tolerance(1e-4, 1e-5)
    sizes = sizes_of([torch.zeros(1, 1), 4])  # the case's input [1, 1] and its d_k = 4
    assert compare_values(torch.zeros(4, 4), torch.zeros(1, 1), tol, Hidden(sizes=sizes), "output") == [
        "output: expected shape [1, 1], got shape [4, 4]"]
    assert compare_values(torch.zeros(4, 4), torch.zeros(1, 1), tol, False, "output") == [
        "output: expected shape [1, 1], got shape [?, ?]"]  # control: without the case's sizes
    assert compare_values(torch.zeros(7, 1), torch.zeros(1, 1), tol, Hidden(sizes=sizes), "output") == [
        "output: expected shape [1, 1], got shape [?, 1]"]  # a size the case does not have stays hidden


# -- one cause, one line --------------------------------------------------------------------------------------------
def test_a_float32_result_with_the_right_values_is_said_once_as_its_dtype():

    tol = Tolerance(1e-7, 1e-9, lower=Tolerance(1e-4, 1e-5))
    expected = torch.tensor([0.9544, 1.4950, 1.4754], dtype=torch.float64) / 3
    lines = compare_values(expected.float(), expected, tol, True, "output")
    assert lines[0] == "output: expected dtype float64, got float32" and len(lines) == 2
    assert lines[1].mid == "float32-by-default" and not any("values differ" in line for line in lines)
    wrong = compare_values((expected * 2).float(), expected, tol, True, "output")  # control: two causes, two lines
    assert wrong[0] == "output: expected dtype float64, got float32" and wrong[1].startswith("output: values differ")


def test_a_row_said_to_differ_prints_differently():

    expected = torch.tensor([0.25, 0.5, 0.125], dtype=torch.float64)
    got = expected.clone()
    got[1] += 3e-6
    lines = compare_values(got, expected, Tolerance(1e-7, 1e-9), True, "output")
    assert lines[1:] == ["  expected values: [0.250000, 0.500000, 0.125000]",
                         "  got      values: [0.250000, 0.500003, 0.125000]"]
    far = got.clone()
    far[1] += 0.1  # control: a difference the usual 4 decimals show is printed with 4
    assert compare_values(far, expected, Tolerance(1e-7, 1e-9), True, "output")[2] == \
        "  got      values: [0.2500, 0.6000, 0.1250]"
