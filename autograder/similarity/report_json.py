"""DIR/similarity.json: the pairs, most similar first, for the dashboard and for machines."""
from __future__ import annotations

import json
from pathlib import Path

from ..outputs import atomic_file
from .rank import Comparison, Pair


def pair_json(pair: Pair) -> dict:
    entry = {"a": pair.a.name, "b": pair.b.name, "score": pair.score, "overall": pair.overall,
             "steps": pair.shared_steps,
             "step_scores": {s: round(m.score, 4) for s, m in sorted(pair.steps.items(), key=lambda kv: -kv[1].score)}}
    if pair.a.term != "current" or pair.b.term != "current":
        entry["terms"] = [pair.a.term, pair.b.term]
    return entry


def write(path: Path, comparison: Comparison) -> list[dict]:
    pairs = [pair_json(p) for p in comparison.pairs]
    atomic_file.write_text(path, json.dumps(pairs, indent=1) + "\n")
    return pairs
