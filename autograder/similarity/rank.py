"""Rank pairs of submissions by the code they share, step by step, beyond what everyone may share.

Each step's normalised tokens are fingerprinted (copydetect's winnowing). A fingerprint is evidence only if
it is not boilerplate (stubs, reference, the book) and not common: one found in the same step of more than
``common_fraction`` of the submissions (and more than ``common_min`` of them) is how this class writes that
step, not something two students passed between them. Pairs are found through an index of the evidence
(a fingerprint -> the submissions that have it), so only pairs sharing at least one fingerprint are scored;
every other pair of the n (n - 1) / 2 shares nothing and scores 0.

Scores (0 to 1):

- a step: shared evidence / (the smaller side's evidence + ``SMOOTH``); ``SMOOTH`` keeps a step whose only
  departure from the reference is two or three tokens from scoring like one copied line for line;
- overall: the same sums over all steps;
- the pair's score: the larger of the overall score and its most shared step's score, so one copied step
  among independent ones is not diluted by the rest.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations

from .extract import Submission
from .fingerprint import Alphabet, fingerprints

SMOOTH = 8
#: a step counts as shared in the JSON's ``steps`` from this step score on, with at least MIN_SHARED fingerprints
STEP_SHARED = 0.5
MIN_SHARED = 3


@dataclass
class StepMatch:
    step: str
    score: float
    shared: int               # fingerprints (evidence) both have
    evidence: tuple[int, int]  # each side's evidence in this step
    hashes: set[int] = field(default_factory=set, repr=False)


@dataclass
class Pair:
    a: Submission
    b: Submission
    score: float
    overall: float
    steps: dict[str, StepMatch]

    @property
    def shared_steps(self) -> list[str]:
        return [s for s, m in sorted(self.steps.items(), key=lambda kv: -kv[1].score)
                if m.score >= STEP_SHARED and m.shared >= MIN_SHARED]


@dataclass
class Prints:
    """A submission's fingerprints per step: all of them (hash -> token indexes), and its evidence."""
    all: dict[str, dict[int, list[int]]]
    evidence: dict[str, set[int]]


@dataclass
class Comparison:
    pairs: list[Pair]             # most similar first; only pairs that share evidence
    prints: dict[str, Prints]     # by Submission.key
    compared: int                 # pairs in scope (all of them, implicitly)
    candidates: int               # pairs that shared at least one fingerprint, and were scored
    common_cap: int


def fingerprint_all(subs: list[Submission], alphabet: Alphabet, boilerplate: set[int]) -> dict[str, Prints]:
    found = {}
    for sub in subs:
        per_step, evidence = {}, {}
        for step, code in sub.steps.items():
            prints = fingerprints(alphabet.text(code.tokens))
            per_step[step] = prints
            evidence[step] = set(prints) - boilerplate
        found[sub.key] = Prints(per_step, evidence)
    return found


def in_scope(a: Submission, b: Submission) -> bool:
    """This term's submissions with each other and with last term's; last term's never with each other."""
    return a.term == "current" or b.term == "current"


def compare(subs: list[Submission], alphabet: Alphabet, boilerplate: set[int], common_fraction: float = 0.2,
            common_min: int = 4) -> Comparison:
    prints = fingerprint_all(subs, alphabet, boilerplate)
    index: dict[tuple[str, int], list[int]] = {}
    for i, sub in enumerate(subs):
        for step, hashes in prints[sub.key].evidence.items():
            for h in hashes:
                index.setdefault((step, h), []).append(i)
    cap = max(common_min, math.ceil(common_fraction * len(subs)))
    common = {key for key, holders in index.items() if len(holders) > cap}
    for sub in subs:
        for step, hashes in prints[sub.key].evidence.items():
            hashes -= {h for h in hashes if (step, h) in common}
    shared: dict[tuple[int, int], dict[str, set[int]]] = {}
    for (step, h), holders in index.items():
        if len(holders) < 2 or len(holders) > cap:
            continue
        for i, j in combinations(holders, 2):
            if in_scope(subs[i], subs[j]):
                shared.setdefault((i, j), {}).setdefault(step, set()).add(h)
    pairs = [_score(subs[i], subs[j], steps, prints) for (i, j), steps in shared.items()]
    pairs.sort(key=lambda p: (-p.score, -p.overall, p.a.key, p.b.key))
    n_current = sum(s.term == "current" for s in subs)
    n_other = len(subs) - n_current
    compared = n_current * (n_current - 1) // 2 + n_current * n_other
    return Comparison(pairs, prints, compared, len(shared), cap)


def _score(a: Submission, b: Submission, steps: dict[str, set[int]], prints: dict[str, Prints]) -> Pair:
    matches = {}
    total_shared = total_base = 0
    for step in sorted(set(prints[a.key].evidence) & set(prints[b.key].evidence)):
        ea, eb = len(prints[a.key].evidence[step]), len(prints[b.key].evidence[step])
        both = steps.get(step, set())
        base = min(ea, eb)
        total_shared += len(both)
        total_base += base
        if both:
            matches[step] = StepMatch(step, len(both) / (base + SMOOTH), len(both), (ea, eb), both)
    overall = total_shared / (total_base + SMOOTH) if total_base else 0.0
    score = max([overall] + [m.score for m in matches.values()])
    return Pair(a, b, round(score, 4), round(overall, 4), matches)
