"""The hand-in corpus's recorded kernel labels (tests/corpus/handins/labels.json) were made from the hand-ins and the
label code of this checkout: a change to either that was not recorded again is found here in seconds, not by the
system test that then labels every hand-in in kernels again (3 CPU-minutes of every later run) and only warns.
"""
from __future__ import annotations

import json
import sys

import pytest

from .conftest import ROOT

HANDINS = ROOT / "tests" / "corpus" / "handins"


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """kernel_label.py (the recording's code) and make_handins' corpus written afresh."""
    sys.path.insert(0, str(HANDINS))
    try:
        import kernel_label  # noqa: PLC0415 - beside the corpus, on the path just above
        import make_handins  # noqa: PLC0415 - beside the corpus, on the path just above
    finally:
        sys.path.remove(str(HANDINS))
    return kernel_label, make_handins.write(tmp_path_factory.mktemp("handins") / "handins")


def test_the_recorded_labels_were_made_from_these_hand_ins_and_this_code(recording):
    module, folders = recording
    kept = json.loads(module.RECORDED.read_text())
    assert kept["made_from"] == module.made_from(folders), (
        "tests/corpus/handins/labels.json is stale: the hand-ins or the label's code changed since it was recorded; "
        "record it again with python tests/corpus/handins/kernel_label.py (about 2 minutes)")
    assert set(kept["labels"]) == set(folders)


def test_a_changed_hand_in_makes_the_recording_stale(recording):
    module, folders = recording
    before = module.made_from(folders)
    handin = next(iter(folders.values()))
    changed = next(p for p in sorted(handin.rglob("*")) if p.is_file())
    original = changed.read_bytes()
    try:
        changed.write_bytes(original + b"\n")
        assert module.made_from(folders) != before
    finally:
        changed.write_bytes(original)
    assert module.made_from(folders) == before
