"""The corpus's verdicts: for each hand-in, the steps where ``grade autograde`` disagrees with the kernel's label, and
whether the hand-in was named for a person (``extra_data.problems``).

``python tests/corpus/handins/verdicts.py LABELS.json RESULTS/`` prints the table (the labels as
``kernel_label.label_all`` gives them, saved as JSON); ``tests/test_handin_corpus.py`` asserts on ``compare``.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Verdict:
    handin: str
    score: float = 0.0
    max_score: float = 0.0
    #: steps the kit scores otherwise than the label: (step, "full" or "lost" as the kit gave it)
    wrong: list[tuple[str, str]] = field(default_factory=list)
    #: the kinds of problem the hand-in was named under, and the steps each names
    named: dict[str, list[str]] = field(default_factory=dict)

    @property
    def unexplained(self) -> list[tuple[str, str]]:
        """Wrong verdicts on steps no problem names: a wrong verdict nobody is told to look at."""
        covered = {s for steps in self.named.values() for s in steps}
        modules = {m for kind, steps in self.named.items() if kind == "module_not_graded" for m in steps}
        return [(s, how) for s, how in self.wrong if s not in covered and s.split(".", 1)[0] not in modules]


def compare(label: dict, results: dict, handin: str) -> Verdict:
    """``label``: one hand-in's (``kernel_label``); ``results``: its results.json."""
    verdict = Verdict(handin, results["score"], sum(t["max_score"] for t in results["tests"]))
    full: dict[str, bool] = {}
    for test in results["tests"]:
        step = test["name"].split(" ", 1)[0]
        full[step] = full.get(step, True) and test["score"] >= test["max_score"]
    for step, ok in full.items():
        expected = step not in label["differ"]
        if ok != expected:
            verdict.wrong.append((step, "full" if ok else "lost"))
    for problem in results.get("extra_data", {}).get("problems", []):
        steps = list(problem.get("steps") or [])
        if problem.get("kind") == "module_not_graded":
            steps = steps or [problem.get("module")]
        verdict.named.setdefault(problem["kind"], []).extend(steps)
    return verdict


def compare_all(labels: dict[str, dict], results_dir: Path) -> dict[str, Verdict]:
    return {name: compare(label, json.loads((results_dir / name / "results.json").read_text()), name)
            for name, label in labels.items()}


def table(verdicts: dict[str, Verdict]) -> str:
    lines = ["| hand-in | score | wrong step verdicts | named for a person |", "| --- | --- | --- | --- |"]
    for name, v in verdicts.items():
        lines.append(f"| {name} | {v.score:g}/{v.max_score:g} | {len(v.wrong)} | {', '.join(sorted(v.named)) or '-'} |")
    wrong = sum(len(v.wrong) for v in verdicts.values())
    handins = sum(bool(v.wrong) for v in verdicts.values())
    silent = sum(bool(v.unexplained) for v in verdicts.values())
    lines.append(f"\n{wrong} wrong step verdicts in {handins} hand-ins; {silent} of those hand-ins named nowhere")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(compare_all(json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2]))))
