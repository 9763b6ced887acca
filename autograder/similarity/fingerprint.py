"""Fingerprints of a normalised token stream: copydetect's k-gram hashing and robust winnowing.

copydetect fingerprints a string of characters; here each normalised token is one character of that string
(its own code point), so a k-gram is k tokens and every fingerprint's index is a token's index: shared
fragments map back to the student's own lines.

The k-gram hashes are Karp-Rabin hashes of the token codes (as in the winnowing paper), not copydetect's
``hashed_kgrams``: that one uses Python's ``hash()``, which is salted per process, so which fingerprints
winnowing picks, and so the scores, would change from run to run. Selection (``winnow``) and the copied
slices are copydetect's.
"""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")  # copydetect's package imports matplotlib for its own report

import numpy as np
from copydetect.utils import get_copied_slices, winnow

from .normalise import Token

#: tokens per k-gram; a shared run of K + WINDOW - 1 tokens or more is always found (the winnowing guarantee)
K = 5
WINDOW = 4


class Alphabet:
    """One character per distinct normalised token, the same for every document of a run."""

    def __init__(self) -> None:
        self._chars: dict[str, str] = {}

    def text(self, toks: list[Token]) -> str:
        out = []
        for tok in toks:
            char = self._chars.get(tok.text)
            if char is None:
                char = self._chars[tok.text] = chr(0x10000 + len(self._chars))  # clear of the surrogates
            out.append(char)
        return "".join(out)


_BASE = np.uint64(1_000_003)


def hashed_kgrams(doc: str, k: int = K) -> np.ndarray:
    """Karp-Rabin hashes (mod 2**64) of every k-gram of ``doc``, the same in every run and on every machine."""
    codes = np.frombuffer(doc.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    n = len(codes) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    acc = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k):
            acc = acc * _BASE + codes[j:j + n]
    return acc.view(np.int64)


def fingerprints(doc: str, k: int = K, window: int = WINDOW) -> dict[int, list[int]]:
    """Winnowed k-gram hashes of ``doc`` -> the token indexes where each starts."""
    if len(doc) < k:
        return {}
    hashes, idx = winnow(hashed_kgrams(doc, k), window, remove_duplicates=False)
    found: dict[int, list[int]] = {}
    for h, i in zip(hashes.tolist(), idx.tolist()):
        found.setdefault(h, []).append(i)
    return found


def all_kgrams(doc: str, k: int = K) -> set[int]:
    """Every k-gram hash (no winnowing): what boilerplate is made of."""
    return set(hashed_kgrams(doc, k).tolist()) if len(doc) >= k else set()


def slices(indexes: list[int], k: int = K) -> list[tuple[int, int]]:
    """Runs of tokens covered by the k-grams starting at ``indexes``: [(first, last + 1)]."""
    if not indexes:
        return []
    starts, ends = get_copied_slices(sorted(indexes), k)
    return list(zip(starts.tolist(), ends.tolist()))
