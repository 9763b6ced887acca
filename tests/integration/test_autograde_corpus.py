"""`grade autograde` on the sample corpus: correct variants get full marks, each bug costs its step only.

The corpus is graded once (``graded``, about 25 s on 2 unloaded cores); its 133 tests only read the results."""
from __future__ import annotations

import html
import json
import re

import pytest

from autograder.course import load_course

from .conftest import CORPUS, MANIFEST, ROOT, run_grade
from tests.support.kit_files import scan
from tests.support.short_course import STEP_SECONDS
from tests.support.leak_scan import hidden_value_needles, scan_pages, values_in

COURSE = load_course(ROOT / "course.yml")


@pytest.fixture(scope="module")
def graded(tmp_path_factory, short_course_file):
    """The corpus graded by the course with a 6 s step limit (tests/support/short_course.py): ``hang_and_exit``
    spins a core until its step's limit (20 s of the course's, 14 CPU-s more than this), and every other step of the
    corpus ends within a second."""
    out = tmp_path_factory.mktemp("results")
    result = run_grade("autograde", str(CORPUS), "--out", str(out), "--course", str(short_course_file))
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
                          if any(t["name"].startswith(f"{s} {c}:") and t["status"] == "failed"
                                 for t in result["tests"]))
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
    assert "gradient was cut" in cut["causal_attention.causal_attention_weights gradients: "
                                     "Causal attention weights (-inf mask)"]
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
    tests = {t["name"].split(" ", 1)[0] + " " + t["name"].split(" ")[1].rstrip(":"): t
             for t in load(graded, "hang_and_exit")["tests"]}
    limit = f"the time limit of {STEP_SECONDS} s for this step was hit"
    assert limit in tests["simple_attention.attention_scores values"]["output"]
    # where the loop was when it was stopped (its stack, dumped on SIGUSR2): the student's own file and line
    assert re.search(r"your code was at simple_attention\.py, line [56], in attention_scores when it was stopped",
                     tests["simple_attention.attention_scores values"]["output"])
    assert limit in tests["simple_attention.attention_scores gradients"]["output"]
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
    """Every results.json and feedback.html of the corpus, scanned for the kit's file names."""
    assert scan(graded) == {}


def test_a_failure_in_the_worker_is_the_student_s_to_read_and_never_the_grader_s_log(graded):
    """A call into the student's object that failed inside the worker (no W_query to load the reference weights
    into): the student reads what the grader could not do with their object; the worker's traceback is the worker's
    word, so nothing of it reaches grader_errors.log, which holds the trusted side's own failures only."""
    out = "\n".join(t["output"] for t in load(graded, "bug_renamed_query")["tests"])
    assert ("loading the reference weights into your module failed: your module has no parameter named "
            "W_query.weight") in out
    assert "runtime.py" not in out and "your code raised" not in out
    log = graded / "grader_errors.log"
    assert not log.exists() or "bug_renamed_query" not in log.read_text()


def test_a_gradients_count_says_only_what_is_new(graded):
    """out_proj never applied: [gradients] points to [forward] instead of reprinting its values."""
    out = {t["name"].split(":", 1)[0]: t["output"] for t in load(graded, "bug_mha_no_out_proj")["tests"]}
    grads = out["multihead_attention.MultiHeadAttention gradients"]
    assert "the output of this case is wrong as shown under [forward]; the gradients differ too" in grads
    assert "parameter out_proj.weight gets no gradient" in grads
    assert "values differ" not in grads and "likely: out_proj" not in grads
    assert "likely: out_proj is created but never applied" in out["multihead_attention.MultiHeadAttention forward"]


def test_mha_scaled_by_sqrt_d_out_is_named(graded):
    """Scaled by sqrt(d_out) instead of sqrt(head_dim), named in autograde as in grade check."""
    out = "\n".join(t["output"] for t in load(graded, "bug_mha_scale_by_d_out")["tests"])
    assert "likely: scores scaled by sqrt(d_out) instead of sqrt(head_dim)" in out
    control = "\n".join(t["output"] for t in load(graded, "bug_mha_no_out_proj")["tests"])
    assert "sqrt(d_out)" not in control
    tags = {tag for t in load(graded, "bug_mha_scale_by_d_out")["tests"] for tag in t.get("tags", [])}
    assert "misconception:scaled-by-d-out" in tags


@pytest.mark.parametrize("name, likely", [("bug_mha_scale_by_d_out",
                                           "scores scaled by sqrt(d_out) instead of sqrt(head_dim)")])
def test_grade_check_names_the_mha_scaling(name, likely):
    run = run_grade("check", str(CORPUS / name))
    assert f"likely: {likely}" in run.stdout


#: the sample, the count whose feedback names it, its id, and the words a student reads
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


#: the mistakes beginners make most, as readers of the book write them (tests/corpus/variants/make_variants.py), each
#: with a control that passes: the count whose feedback names it (public counts are checked by grade check too), its
#: id, and the "likely:" line, in the student's own names
STUDENT_MISTAKES = [
    ("bug_transfer_key_not_copied", "correct_transfer_loop", "trainable_attention.transfer_weights values",
     "not-copied",
     "likely: sa_v1.W_key still holds the values it was created with: the call never copies into it (copy_ the "
     "transposed weight into it under torch.no_grad())"),
    ("bug_mha_assert_tuple", "correct_mha_assert", "multihead_attention.MultiHeadAttention errors",
     "assert-on-a-tuple",
     "likely: assert (condition, message) asserts a tuple, which is always true, so it never fails: write assert "
     "condition, message (or raise ValueError(message))"),
    ("bug_wrapper_plain_list", "correct_wrapper_appended_heads",
     "multihead_attention.MultiHeadAttentionWrapper parameters",
     "modules-in-a-plain-list", "likely: self.heads is a plain Python list of modules, which nn.Module does not "
     "register: its layers' parameters are not your module's (and .eval() and .to() miss them); use "
     "nn.ModuleList([...]) (or nn.ModuleDict)"),
    ("bug_causal_keys_T", "correct_causal_keys_mT", "causal_attention.CausalAttention forward",
     "batch-transposed-with-T",
     "likely: keys.T reverses every dimension of a batch ([b, num_tokens, d] becomes [d, num_tokens, b]): transpose "
     "the last two only, keys.transpose(1, 2) (or keys.mT)"),
    ("bug_mha_view_no_contiguous", "correct_mha_reshape", "multihead_attention.MultiHeadAttention forward",
     "view-not-contiguous", "likely: context_vec.view(...) on a tensor that is not contiguous (a transpose leaves its "
     "memory in the old order): context_vec.contiguous().view(...), or context_vec.reshape(...)"),
    ("bug_mask_not_sliced", "correct_causal_mask_sliced_apart", "causal_attention.CausalAttention forward",
     "mask-not-sliced", "likely: the mask is not sliced to the input's length: it is [context_length, context_length] "
     "and the scores are [num_tokens, num_tokens]; slice it: self.mask.bool()[:num_tokens, :num_tokens]"),
    ("bug_causal_mask_hides_diagonal", "correct_causal_tril_mask", "causal_attention.CausalAttention forward",
     "mask-hides-diagonal", "likely: the mask also hides each token from itself (triu(..., diagonal=0) or tril(..., "
     "diagonal=-1)): mask only the future, j > i (triu(..., diagonal=1))"),
    ("bug_mha_divide_by_head_dim", "correct_mha_sqrt_head_dim", "multihead_attention.MultiHeadAttention forward",
     "divided-by-head-dim", "likely: scores divided by head_dim instead of sqrt(head_dim)"),
    ("bug_causal_dropout_masked_scores", "correct_causal_dropout_inline", "causal_attention.CausalAttention forward",
     "dropout-missing-or-on-scores", "likely: dropout is missing, or applied to the scores before the softmax, which "
     "with one token changes nothing (the softmax of one score is 1 whatever dropout did to it): dropout belongs on "
     "the attention weights, after the softmax"),
    ("bug_causal_dropout_masked_scores", "correct_causal_dropout_inline", "causal_attention.CausalAttention dropout",
     "dropout-on-masked-scores", "likely: dropout applied to the masked scores, before the softmax: a dropped -inf "
     "becomes NaN (-inf times 0); dropout belongs on the attention weights, after the softmax"),
    ("bug_dropout_ignores_eval", "correct_causal_dropout_follows_mode", "causal_attention.CausalAttention forward",
     "dropout-in-eval", "likely: dropout is applied in eval mode too: it must follow self.training (nn.Dropout, or "
     "F.dropout(..., training=self.training))"),
    ("bug_book_loops_float32", "correct_book_loops_dtype", "simple_attention.attention_scores values",
     "float32-by-default", "likely: your result is float32 for float64 inputs (its values are right): torch.zeros, "
     "torch.empty, torch.ones and torch.tensor make float32 unless given a dtype; create the result with "
     "dtype=<the input>.dtype (or torch.zeros_like), so that it keeps the input's precision"),
]


def _count_lines(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines()]


@pytest.mark.parametrize("name, control, test, mid, words", STUDENT_MISTAKES,
                         ids=[f"{n}-{t.rsplit(' ', 1)[1]}" for n, _, t, *_ in STUDENT_MISTAKES])
def test_autograde_names_each_students_mistake_in_their_names(graded, name, control, test, mid, words):
    """The count's feedback says the likely line once, tagged with its id (the dashboard counts it), on the page too;
    the control passes, with no likely line anywhere."""
    tests = {t["name"].split(":", 1)[0]: t for t in load(graded, name)["tests"]}
    assert _count_lines(tests[test]["output"]).count(words) == 1, tests[test]["output"]
    assert f"misconception:{mid}" in tests[test]["tags"]
    assert html.escape(words, quote=True) in (graded / name / "feedback.html").read_text()
    summary = json.loads((graded / "summary.json").read_text())["misconceptions"]
    assert any(m["id"] == mid and name in m["who"] for m in summary[test.split(" ")[0]])
    passed = load(graded, control)
    assert passed["score"] == COURSE.max_points() and "likely:" not in json.dumps(passed["tests"])


PUBLIC_MISTAKES = [entry for entry in STUDENT_MISTAKES if COURSE.steps[entry[2].split(" ")[0]]
                   .counts[entry[2].split(" ")[1]].visibility == "public"]


@pytest.mark.parametrize("name, control, test, mid, words", PUBLIC_MISTAKES,
                         ids=[f"{n}-{t.rsplit(' ', 1)[1]}" for n, _, t, *_ in PUBLIC_MISTAKES])
def test_grade_check_names_each_students_mistake_in_the_same_words(graded, name, control, test, mid, words):
    """grade check says the likely line of autograde's count, with the count's other lines the same too (the grid
    aside); the control passes with no likely line."""
    step, count = test.split(" ")
    run = run_grade("check", str(CORPUS / name), "--step", step, env={"NO_COLOR": "1"})
    block = run.stdout.split(f"{step} [{count}] (", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    grid = re.compile(r"\s+(\d+ |\(\* marks|[\w.]+, row )")  # the grid under the words: grade check's own
    said = [line.strip() for line in block
            if not grid.match(line) and not line.lstrip().startswith(("| ", "your code printed"))]
    assert words in said, run.stdout
    autograde = _count_lines({t["name"].split(":", 1)[0]: t for t in load(graded, name)["tests"]}[test]["output"])[1:]
    assert said == autograde  # the same words, line for line
    passed = run_grade("check", str(CORPUS / control), "--step", step, env={"NO_COLOR": "1"})
    assert passed.returncode == 0 and "likely:" not in passed.stdout


def test_a_hidden_count_says_the_students_own_class_name(graded):
    """A hidden count's error names the student's own class (their source has it), where it read "…" before; the
    control, a name their source does not have, masked all the same, is tests/unit/test_student_words.py's (and the leak
    scan above searches every page for the hidden values)."""
    out = {t["name"].split(":", 1)[0]: t["output"] for t in load(graded, "bug_wrapper_no_qkv_bias")["tests"]}
    said = out["multihead_attention.MultiHeadAttentionWrapper randomized"]
    assert "MultiHeadAttentionWrapper.__init__() got an unexpected keyword argument 'qkv_bias'" in said
    assert "…" not in said


def test_the_students_warning_is_shown_once_at_its_line_never_as_printed_output(graded):
    """Python's SyntaxWarning about the student's assert, once, under the count it explains, with the line read from
    their file; nothing said as printed output. Control: a submission without it says no warning."""
    result = load(graded, "bug_mha_assert_tuple")
    everything = "\n".join(t["output"] for t in result["tests"])
    warning = ("warning about your code: multihead_attention.py, line 41: SyntaxWarning: assertion is always true, "
               "perhaps remove parentheses?")
    assert everything.count(warning) == 1
    errors = {t["name"].split(":", 1)[0]: t["output"]
              for t in result["tests"]}["multihead_attention.MultiHeadAttention errors"]
    assert warning in errors and 'assert (d_out % num_heads == 0, "d_out must be divisible by num_heads")' in errors
    assert "printed" not in result["output"]
    assert "warning about your code" not in json.dumps(load(graded, "correct_mha_assert"))


def test_no_count_says_values_differ_that_its_printed_values_do_not_show(graded):
    """Every failing count of the corpus that prints an expected and a got row prints them differently, and every
    mismatch table on a page shows a difference in each of its rows; the control: an equal pair is found."""
    rows = re.compile(r"^\s*expected (row \[[\d, ]*\]|values): (.*)\n\s*got +(?:row \[[\d, ]*\]|values): (.*)$", re.M)
    cells = re.compile(r"<tr><td>\[[\d, ]+\]</td><td>([^<]*)</td><td>([^<]*)</td>")
    found, shown = [], 0
    for name in MANIFEST:
        for test in load(graded, name)["tests"]:
            for _, expected, got in rows.findall(test["output"]):
                shown += 1
                if expected == got:
                    found.append((name, test["name"]))
        for expected, yours in cells.findall((graded / name / "feedback.html").read_text()):
            shown += 1
            if expected == yours:
                found.append((name, "feedback.html"))
    assert shown > 50 and found == []
    assert rows.findall("  expected values: [0.5000]\n  got      values: [0.5000]") == [
        ("values", "[0.5000]", "[0.5000]")]
