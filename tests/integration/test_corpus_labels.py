"""The corpus's labels are not the grader's own opinion: each variant (tests/corpus/variants/) is
labelled by tests/corpus/label.py, a differential checker against solutions/ that uses none of the kit's
judges, suites or cases, and manifest.json must say the same."""
from __future__ import annotations

import functools

import pytest

from .conftest import CORPUS, MANIFEST
from tests.corpus import label
from tests.corpus.variants.make_variants import VARIANTS

#: the variants: those make_variants.py builds, and the book's assert (written by hand)
LABELLED = sorted([*VARIANTS, "correct_mha_assert"])


@functools.cache
def labelled(name: str) -> dict:
    """The checker's label of a corpus sample, with its stand-ins: computed once for the tests that read it (a
    control below reads two of the variants' labels)."""
    return label.label(CORPUS / name)


@pytest.mark.parametrize("name", LABELLED)
def test_the_manifest_says_what_the_differential_checker_finds(name):
    said = {"expect": MANIFEST[name]["expect"], **({"steps": sorted(MANIFEST[name]["steps"])}
                                                   if MANIFEST[name]["expect"] == "lose" else {})}
    found = labelled(name)
    assert {**found, **({"steps": sorted(found["steps"])} if "steps" in found else {})} == said


def test_the_checker_can_disagree():
    """Controls: without its stand-ins, the checker also blames the step built on the wrong helper (the label
    the grader gave before item 5); and a correct variant is labelled full, a one-step bug not."""
    own = label.label(CORPUS / "bug_v1_own_helpers_scale", standins=False)
    assert own["steps"] == ["trainable_attention.scaled_attention_weights", "trainable_attention.SelfAttention_v1",
                            "trainable_attention.transfer_weights"]  # its check runs the student's v1 too
    assert labelled("correct_v1_own_helpers") == {"expect": "full"}
    assert labelled("bug_normalize_abs") == {"expect": "lose", "steps": ["simple_attention.normalize_sum"]}
