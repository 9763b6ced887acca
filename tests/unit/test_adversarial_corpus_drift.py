"""tests/corpus/adversarial/ is what its generator (build_corpus.py) makes today: a change to solutions/ or exercises/
that the committed copies miss is found here, not by an adversarial test that passes for a stale reason.

The generator runs into a temporary folder and the two trees are compared file by file (symlinks by target). Numbers
that the generator computes with torch (a memorised table) may differ by less than 1e-5: their last digit depends on
the CPU's vector units.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

import pytest

from .conftest import ROOT

CORPUS = ROOT / "tests" / "corpus" / "adversarial"
OWN_FILES = {"build_corpus.py", "conftest.py"}  # the generator's folder holds these beside what it writes
NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")


def generate(out: Path) -> None:
    spec = importlib.util.spec_from_file_location("adversarial_build_corpus", CORPUS / "build_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.OUT = out
    module.build()


def _same_but_last_digits(a: str, b: str) -> bool:
    """The texts are equal but for numbers that differ by less than 1e-5."""
    if NUMBER.split(a) != NUMBER.split(b):
        return False
    x, y = NUMBER.findall(a), NUMBER.findall(b)
    return len(x) == len(y) and all(abs(float(u) - float(v)) < 1e-5 for u, v in zip(x, y))


def differences(made: Path, committed: Path) -> list[str]:
    """What differs between two corpus trees: files only in one, symlinks with other targets, other contents."""
    def entries(root: Path) -> dict[str, Path]:
        return {p.relative_to(root).as_posix(): p for p in root.rglob("*")
                if (p.is_symlink() or p.is_file()) and "__pycache__" not in p.parts
                and p.relative_to(root).as_posix() not in OWN_FILES}

    ours, theirs = entries(made), entries(committed)
    found = [f"only in the generator's output: {name}" for name in sorted(ours.keys() - theirs.keys())]
    found += [f"only in the committed corpus: {name}" for name in sorted(theirs.keys() - ours.keys())]
    for name in sorted(ours.keys() & theirs.keys()):
        a, b = ours[name], theirs[name]
        if a.is_symlink() or b.is_symlink():
            if not (a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)):
                found.append(f"symlink differs: {name}")
        elif a.read_bytes() != b.read_bytes():
            try:
                same = _same_but_last_digits(a.read_text(encoding="utf-8"), b.read_text(encoding="utf-8"))
            except UnicodeDecodeError:
                same = False
            if not same:
                found.append(f"differs: {name}")
    return found


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("adversarial")
    generate(out)
    return out


def test_the_adversarial_corpus_is_what_its_generator_makes(made):
    found = differences(made, CORPUS)
    assert not found, ("tests/corpus/adversarial/ has drifted from build_corpus.py (run `.venv/bin/python "
                       "tests/corpus/adversarial/build_corpus.py`):\n" + "\n".join(found[:40]))


def test_a_drifted_copy_is_found(made, tmp_path):
    """The control: a committed copy with one file edited, one removed and one number off in its 3rd decimal."""
    copy = tmp_path / "copy"
    shutil.copytree(made, copy, symlinks=True)
    assert differences(made, copy) == []
    edited = copy / "patch_torch_comparisons" / "simple_attention.py"
    edited.write_text(edited.read_text() + "# an edit the generator does not make\n")
    (copy / "patch_torch_comparisons" / "causal_attention.py").unlink()
    numbers = next(p for p in sorted(copy.rglob("*.py")) if not p.is_symlink() and "_MEMORIZED = " in p.read_text())
    text = numbers.read_text()
    table = next(line for line in text.splitlines() if line.startswith("_MEMORIZED = "))
    first = NUMBER.search(table, table.index("[["))
    off = table[:first.start()] + f"{float(first.group()) + 0.001:.7f}" + table[first.end():]
    numbers.write_text(text.replace(table, off))
    assert differences(made, copy) == [
        "only in the generator's output: patch_torch_comparisons/causal_attention.py",
        f"differs: {numbers.relative_to(copy).as_posix()}",
        "differs: patch_torch_comparisons/simple_attention.py",
    ]
