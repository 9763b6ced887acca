"""`grade autograde` on the sample corpus: correct variants get full marks, each bug costs its step only."""
from __future__ import annotations

import json
import re

import pytest

from autograder.course import load_course

from .conftest import CORPUS, MANIFEST, ROOT, run_grade
from .kit_files import scan
from .leak_scan import hidden_value_needles, scan_pages, values_in

pytestmark = pytest.mark.slow
COURSE = load_course(ROOT / "course.yml")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    result = run_grade("autograde", str(CORPUS), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def load(graded, name):
    return json.loads((graded / name / "results.json").read_text())


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_submission_scores_as_the_manifest_says(graded, name):
    expect = MANIFEST[name]
    result = load(graded, name)
    lost = sorted({t["name"].split(" ", 1)[0] for t in result["tests"] if t["status"] != "passed"})
    if expect["expect"] == "full":
        assert lost == [] and result["score"] == COURSE.max_points()
    elif expect["expect"] == "zero":
        assert result["score"] == 0
    else:
        assert lost == sorted(expect["steps"]), expect.get("why")
        lost_points = sum(COURSE.steps[s].counts[c].points for s in lost for c in COURSE.steps[s].counts
                          if any(t["name"].startswith(f"{s} {c}:") and t["status"] == "failed" for t in result["tests"]))
        assert result["score"] == COURSE.max_points() - lost_points


def test_results_follow_gradescope_format(graded):
    result = load(graded, "bug_no_scaling")
    assert set(result) >= {"score", "tests", "output", "visibility", "stdout_visibility", "execution_time"}
    assert len(result["tests"]) == sum(len(s.counts) for s in COURSE.steps.values())
    for test in result["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility", "status", "number", "tags"}
        step = test["name"].split(" ", 1)[0]
        assert step in COURSE.steps and test["name"].startswith(step + " ")
        assert test["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
        assert 0 <= test["score"] <= test["max_score"]
    assert result["score"] == sum(t["score"] for t in result["tests"])


def test_stubs_are_not_attempted(graded):
    result = load(graded, "stubs")
    assert all("not attempted" in t["output"] for t in result["tests"])


def test_feedback_names_the_misconception(graded):
    out = {t["name"]: t["output"] for t in load(graded, "bug_no_scaling")["tests"]}
    text = out["trainable_attention.scaled_attention_weights values: Scaled softmax"]
    assert "expected values: [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]" in text  # document 003
    assert "got      values: [" in text
    assert "likely: forgot the 1/sqrt(d_k) scaling" in text
    cut = {t["name"]: t["output"] for t in load(graded, "bug_detach")["tests"]}
    assert "gradient was cut" in cut["causal_attention.causal_attention_weights gradients: Causal attention weights (-inf mask)"]
    renorm = "\n".join(t["output"] for t in load(graded, "bug_mask_after_softmax_no_renorm")["tests"])
    assert "likely: masked after the softmax without renormalizing the rows" in renorm
    order = "\n".join(t["output"] for t in load(graded, "bug_param_order")["tests"])
    assert "different order" in order or "wrong parameters" in order or "in the specified order" in order


VALUES_SHOWN = ("expected row", "got      row", "expected values", "got      values", "|difference|")


def test_hidden_cases_show_no_values(graded):
    controls = 0
    for name in ("bug_no_scaling", "bug_mask_after_softmax_no_renorm", "bug_softmax_dim0", "bug_dropout_on_scores"):
        tests = load(graded, name)["tests"]
        hidden = [t for t in tests if t["visibility"] != "visible" and t["status"] == "failed"]
        # (a module's training-mode dropout case fails publicly by its properties, in words without values)
        public = [t for t in tests if t["visibility"] == "visible" and t["status"] == "failed"
                  and "in training mode with dropout" not in t["output"]]
        assert hidden, f"{name}: no hidden count caught the bug, so nothing here was checked"
        if public:  # the control: the same bug's public failures do show values, in the words looked for below
            assert any(phrase in t["output"] for t in public for phrase in VALUES_SHOWN), name
            controls += 1
        for test in hidden:
            shown = [phrase for phrase in VALUES_SHOWN if phrase in test["output"]]
            assert shown == [], f"{name} {test['name']}: {shown}"
    assert controls >= 3


def test_broken_files_get_clear_messages(graded):
    syntax = "\n".join(t["output"] for t in load(graded, "syntax_error")["tests"])
    assert "SyntaxError (trainable_attention.py, line" in syntax
    missing = "\n".join(t["output"] for t in load(graded, "missing_function")["tests"])
    assert "defines no apply_dropout" in missing
    raising = "\n".join(t["output"] for t in load(graded, "import_raises")["tests"])
    assert "RuntimeError" in raising and "importing multihead_attention.py" in raising


def test_a_hang_and_an_exit_cost_only_their_steps(graded):
    tests = {t["name"].split(" ", 1)[0] + " " + t["name"].split(" ")[1].rstrip(":"): t for t in load(graded, "hang_and_exit")["tests"]}
    assert "the time limit of 20 s for this step was hit" in tests["simple_attention.attention_scores values"]["output"]
    # where the loop was when it was stopped (its stack, dumped on SIGUSR2): the student's own file and line
    assert re.search(r"your code was at simple_attention\.py, line [56], in attention_scores when it was stopped",
                     tests["simple_attention.attention_scores values"]["output"])
    assert "the time limit of 20 s for this step was hit" in tests["simple_attention.attention_scores gradients"]["output"]
    assert "ended the worker process" in tests["simple_attention.normalize_sum values"]["output"]
    assert tests["simple_attention.softmax_naive values"]["status"] == "passed"


def test_each_misconception_is_named(graded):
    """The corpus entries with a ``likely`` key: their feedback names that misconception (a failing count's words,
    or a passing count's note: the frozen weight, which no point rests on)."""
    named = {name: spec["likely"] for name, spec in MANIFEST.items() if spec.get("likely")}
    assert len(named) >= 5
    for name, phrase in named.items():
        text = "\n".join(t["output"] for t in load(graded, name)["tests"])
        assert phrase in text, f"{name}: no {phrase!r} in its feedback"


def test_no_page_shows_a_hidden_expected_value(graded):
    """Every page of the corpus (results.json's outputs, feedback.html, summary.html) is searched for the hidden
    cases' expected values, printed as a scalar or as a row would be; a planted row is found (the control)."""
    needles = hidden_value_needles()
    assert len(needles["singles"]) > 1000 and len(needles["pairs"]) > 1000
    pages = list(graded.glob("*/feedback.html"))
    assert len(pages) == len(MANIFEST)
    assert scan_pages(graded, needles) == {}
    a, b = sorted(needles["pairs"])[len(needles["pairs"]) // 2]
    planted = pages[0].read_text().replace("</pre>", f"expected row [0]: [{a}, {b}, 0.5]</pre>", 1)
    assert values_in(planted, needles) == [f"{a}, {b}"]
    single = sorted(needles["singles"])[0]
    assert values_in(f"<td>{single}</td>", needles) == [single]


def test_no_student_message_names_a_file_of_the_kit(graded):
    """Issue 22, item 1: every results.json and feedback.html of the corpus, scanned for the kit's file names."""
    assert scan(graded) == {}


def test_a_failure_in_the_worker_is_the_student_s_to_read_and_never_the_grader_s_log(graded):
    """A call into the student's object that failed inside the worker (no W_query to load the reference weights
    into): the student reads what the grader could not do with their object; the worker's traceback is the worker's
    word, so nothing of it reaches grader_errors.log, which holds the trusted side's own failures only."""
    out = "\n".join(t["output"] for t in load(graded, "bug_renamed_query")["tests"])
    assert "loading the reference weights into your module failed: your module has no parameter named W_query.weight" in out
    assert "runtime.py" not in out and "your code raised" not in out
    log = graded / "grader_errors.log"
    assert not log.exists() or "bug_renamed_query" not in log.read_text()


def test_a_gradients_count_says_only_what_is_new(graded):
    """Issue 22, item 4: out_proj never applied: [gradients] points to [forward] instead of reprinting its values."""
    out = {t["name"].split(":", 1)[0]: t["output"] for t in load(graded, "bug_mha_no_out_proj")["tests"]}
    grads = out["multihead_attention.MultiHeadAttention gradients"]
    assert "the output of this case is wrong as shown under [forward]; the gradients differ too" in grads
    assert "parameter out_proj.weight gets no gradient" in grads
    assert "values differ" not in grads and "likely: out_proj" not in grads
    assert "likely: out_proj is created but never applied" in out["multihead_attention.MultiHeadAttention forward"]


def test_mha_scaled_by_sqrt_d_out_is_named(graded):
    """Issue 22, item 3: scaled by sqrt(d_out) instead of sqrt(head_dim), named in autograde as in grade check."""
    out = "\n".join(t["output"] for t in load(graded, "bug_mha_scale_by_d_out")["tests"])
    assert "likely: scores scaled by sqrt(d_out) instead of sqrt(head_dim)" in out
    control = "\n".join(t["output"] for t in load(graded, "bug_mha_no_out_proj")["tests"])
    assert "sqrt(d_out)" not in control
    tags = {tag for t in load(graded, "bug_mha_scale_by_d_out")["tests"] for tag in t.get("tags", [])}
    assert "misconception:scaled-by-d-out" in tags


@pytest.mark.parametrize("name, likely", [("bug_mha_scale_by_d_out", "scores scaled by sqrt(d_out) instead of sqrt(head_dim)")])
def test_grade_check_names_the_mha_scaling(name, likely):
    run = run_grade("check", str(CORPUS / name))
    assert f"likely: {likely}" in run.stdout


#: issue 22, item 3: the sample, the count whose feedback names it, its id, and the words a student reads
NAMED = [
    ("bug_mha_heads_interleaved", "multihead_attention.MultiHeadAttention forward", "heads-split-interleaved",
     "likely: heads split into interleaved columns (view(b, T, head_dim, num_heads)): head h takes the contiguous "
     "columns h*head_dim to (h+1)*head_dim: view(b, T, num_heads, head_dim).transpose(1, 2)"),
    ("bug_mha_scale_by_num_heads", "multihead_attention.MultiHeadAttention forward", "scaled-by-num-heads",
     "likely: scores scaled by sqrt(num_heads) instead of sqrt(head_dim)"),
    ("bug_num_tokens_from_batch", "causal_attention.CausalAttention forward", "num-tokens-from-batch",
     "likely: num_tokens read from the batch dimension (x.shape[0]): the mask is then sliced to the batch size "
     "(with a batch of 1 it hides nothing); x is [batch, num_tokens, d_in]"),
    ("bug_dropout_on_values", "causal_attention.CausalAttention dropout", "dropout-on-values",
     "likely: dropout applied to the values (or the context) instead of the attention weights: "
     "dropout belongs on the weights, after the softmax, before they meet the values"),
    ("bug_dropout_on_scores", "causal_attention.CausalAttention dropout", "dropout-on-scores",
     "likely: dropout applied to the scores, before the softmax, instead of to the attention weights after it"),
    ("bug_seed_in_forward", "causal_attention.CausalAttention dropout", "seed-in-forward",
     "likely: torch.manual_seed(...) inside forward: your dropout mask is the same on every call, and not the one "
     "the caller's seed gives; seed outside the module, never in forward"),
]


@pytest.mark.parametrize("name, test, mid, words", NAMED, ids=[n for n, *_ in NAMED])
def test_autograde_names_each_remaining_misconception(graded, name, test, mid, words):
    """Its count's feedback says the words and is tagged with the id; no other sample's feedback says them (the
    control: the words are not said to everyone)."""
    tests = {t["name"].split(":", 1)[0]: t for t in load(graded, name)["tests"]}
    assert words in tests[test]["output"].splitlines() or f"  {words}" in tests[test]["output"].splitlines()
    assert f"misconception:{mid}" in tests[test]["tags"]
    others = [other for other in MANIFEST if other != name
              and any(words in t["output"] for t in load(graded, other)["tests"])]
    assert others == []
    summary = json.loads((graded / "summary.json").read_text())["misconceptions"]
    step = test.rsplit(" ", 1)[0]
    assert any(m["id"] == mid and name in m["who"] and m["label"] in words for m in summary[step])  # the dashboard


#: grade check runs the public counts only: the dropout mistakes show in the hidden dropout count (above) alone
PUBLIC = [entry for entry in NAMED if not entry[1].endswith(" dropout")]


@pytest.mark.parametrize("name, test, mid, words", PUBLIC, ids=[n for n, *_ in PUBLIC])
def test_grade_check_names_each_public_misconception(name, test, mid, words):
    run = run_grade("check", str(CORPUS / name), "--step", test.split(" ")[0], env={"NO_COLOR": "1"})
    assert words in run.stdout, run.stdout
    control = run_grade("check", str(CORPUS / "correct_loops"), "--step", test.split(" ")[0], env={"NO_COLOR": "1"})
    assert "likely:" not in control.stdout and control.returncode == 0  # a correct module: no likely line
