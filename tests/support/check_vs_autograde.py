"""For each case class, ``grade check`` and ``grade autograde`` on the same code.

``python -m tests.support.check_vs_autograde [FOLDER]`` builds the samples into FOLDER (a temporary one by default),
runs both commands and prints the table; ``tests/integration/test_check_agrees.py`` asserts on the same figures.
"""
from __future__ import annotations

import ast
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import CORPUS, ROOT, run_grade
from tests.corpus.variants.make_variants import build

# case class -> (sample, how it is made: a corpus sample's name, or edits of solutions/)
LATIN1 = "# r\xe9sum\xe9: the mask hides the future\n"
PRINTS = """    for i in range(100_000):  # debug lines
        print(f"debug {i}: scores sum to {scores.sum().item():.6f}, shape {tuple(scores.shape)}")
    return scores / scores.sum()
"""
CLASSES: dict[str, tuple[str, list[tuple[str, str, str]] | None]] = {
    "state kept between calls (MultiHeadAttention caches keys)": ("bug_mha_caches_kv", None),
    "state kept between calls (CausalAttention overwrites its mask)": ("bug_causal_mask_overwritten", None),
    "GPT-2 dropout 0.1": ("bug_gpt2_dropout", None),
    "F.normalize(p=1)": ("bug_normalize_abs", None),
    "softmax without max": ("bug_softmax_no_max", None),
    "the book's float32 loops": ("bug_book_loops_float32", None),
    "the book's float32 loop, trainable context_vector": ("bug_trainable_context_loop_float32", None),
    "a float32 loop, mask_and_renormalize": ("bug_renorm_loop_float32", None),
    "a Latin-1 comment": ("latin1_comment", [("causal_attention", "import torch\n", LATIN1 + "import torch\n")]),
    "100k prints": ("prints_100k", [("simple_attention", "    return scores / scores.sum()\n", PRINTS)]),
    "dropout in eval mode (CausalAttention)": ("bug_dropout_ignores_eval", None),
    "dropout in eval mode (MultiHeadAttention)": ("bug_mha_dropout_ignores_eval", None),
    "dropout on the scores (training mode)": ("bug_dropout_on_scores", None),
    "dropout on the values (training mode)": ("bug_dropout_on_values", None),
    "a squeeze() at T = 1 (CausalAttention)": ("bug_causal_squeeze_one_token", None),
    "assert vs ValueError": ("correct_mha_assert", None),
    "own helpers v1, one wrong": ("bug_v1_own_helpers_scale", None),
}


@dataclass
class Outcome:
    sample: str
    check_score: float = 0.0
    check_max: float = 0.0
    check_exit: int = 0
    check_failing: dict[str, str] = field(default_factory=dict)  # step -> its status (FAILED, blocked)
    check_text: str = ""
    autograde_score: float = 0.0
    autograde_max: float = 0.0
    autograde_lost: dict[str, float] = field(default_factory=dict)  # step -> points lost
    autograde_output: dict[str, str] = field(default_factory=dict)  # step -> the output of its failed tests
    autograde_top: str = ""  # the submission's own output (what is said once, at the top)


def stage(folder: Path) -> Path:
    subs = folder / "submissions"
    subs.mkdir(parents=True, exist_ok=True)
    for sample, edits in CLASSES.values():
        if edits is None:
            shutil.copytree(CORPUS / sample, subs / sample, dirs_exist_ok=True)
        else:
            build(sample, edits, out=subs)
    latin1 = subs / "latin1_comment" / "causal_attention.py"  # saved by an editor in Latin-1, not UTF-8
    latin1.write_bytes(latin1.read_text(encoding="utf-8").encode("latin-1"))
    return subs


def check(subs: Path, sample: str) -> Outcome:
    home = subs.parent / "check-home"  # run from elsewhere: no exercises/ there
    home.mkdir(exist_ok=True)
    as_json = run_grade("check", str(subs / sample), "--json", cwd=home, timeout=600)
    text = run_grade("check", str(subs / sample), cwd=home, timeout=600)
    data = json.loads(as_json.stdout)
    return Outcome(sample, check_score=data["score"], check_max=data["max_score"], check_exit=as_json.returncode,
                   check_failing={s["step"]: s["status"] for s in data["steps"] if s["status"] != "passed"},
                   check_text=text.stdout)


def autograde(subs: Path, outcomes: dict[str, Outcome]) -> None:
    out = subs.parent / "results"
    result = run_grade("autograde", str(subs), "--out", str(out), timeout=1800)
    assert result.returncode == 0, result.stderr
    for sample, outcome in outcomes.items():
        data = json.loads((out / sample / "results.json").read_text())
        outcome.autograde_score = data["score"]
        outcome.autograde_top = data.get("output", "")
        outcome.autograde_max = sum(t["max_score"] for t in data["tests"])
        for t in data["tests"]:
            if t["score"] < t["max_score"]:
                step = t["name"].split(" ", 1)[0]
                outcome.autograde_lost[step] = outcome.autograde_lost.get(step, 0) + t["max_score"] - t["score"]
                outcome.autograde_output[step] = outcome.autograde_output.get(step, "") + t["output"]


def run_all(folder: Path) -> dict[str, Outcome]:
    subs = stage(folder)
    outcomes = {sample: check(subs, sample) for sample, _ in CLASSES.values()}
    autograde(subs, outcomes)
    return outcomes


def docstring(step: str) -> str:
    """The step's docstring in the exercise files a student has."""
    module, name = step.split(".", 1)

    tree = ast.parse((ROOT / "exercises" / f"{module}.py").read_text())
    node = next(n for n in tree.body if getattr(n, "name", None) == name)
    return ast.get_docstring(node) or ""


#: where the step's docstring says it plainly instead of a public case: sample -> {step: the docstring's words}
SAID_IN_DOCSTRING = {"bug_gpt2_dropout": {"multihead_attention.gpt2_small_attention": "dropout 0.0"}}
#: where grade check fails more than autograde deducts, and why (sample -> {step: why})
CHECK_SAYS_MORE = {
    "bug_v1_own_helpers_scale": {
        "trainable_attention.SelfAttention_v1": "built on the student's own scaled_attention_weights: grade check "
                                                "has no stand-ins (reference code), autograde grades it beside "
                                                "correct ones"},
}


def disagreements(outcome: Outcome) -> list[str]:
    """Where ``grade check`` and ``grade autograde`` do not agree on ``outcome``'s sample, in words."""
    said = SAID_IN_DOCSTRING.get(outcome.sample, {})
    more = CHECK_SAYS_MORE.get(outcome.sample, {})
    failed = {s for s, status in outcome.check_failing.items() if status == "failed"}
    out = []
    for step in outcome.autograde_lost:
        if step in failed:
            continue
        if step in said and said[step] in " ".join(docstring(step).split()):
            continue
        out.append(f"{step}: autograde takes {outcome.autograde_lost[step]:g} points, grade check shows nothing")
    for step, status in outcome.check_failing.items():
        if step in outcome.autograde_lost or step in more:
            continue
        if status == "blocked" and any(f"{step} " in line and "fix " in line and
                                       any(f"fix {lost} first" in line for lost in outcome.autograde_lost)
                                       for line in outcome.check_text.splitlines()):
            continue  # shown as blocked by the step autograde deducts: fix that first
        out.append(f"{step}: grade check says {status}, autograde takes no point")
    if (outcome.check_exit == 0) != (not failed):
        out.append(f"grade check exits {outcome.check_exit} with {sorted(failed)} failing")
    return out


def table(outcomes: dict[str, Outcome]) -> str:
    rows = [("case class", "sample", "grade check", "steps failing in check", "grade autograde", "steps losing points")]
    for what, (sample, _) in CLASSES.items():
        o = outcomes[sample]
        rows.append((what, sample, f"{o.check_score:g}/{o.check_max:g} (exit {o.check_exit})",
                     ", ".join(f"{s} ({st})" for s, st in o.check_failing.items()) or "-",
                     f"{o.autograde_score:g}/{o.autograde_max:g}",
                     ", ".join(f"{s} (-{p:g})" for s, p in o.autograde_lost.items()) or "-"))
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="check-vs-autograde-"))
    print(table(run_all(where)))
