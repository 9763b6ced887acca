"""The reference worker's answers kept by the trusted side, so that a stand-in call asked before is not run again.

A stand-in call (``worker/standins.py``) is plain data: the step, the module's tree, the tensors it is given and
the random state. The reference worker's answer is a function of that data alone: it keeps no student state,
and what it keeps (``reference_server.py``: modules built from given arguments and a random state, named by
their digest) is the same for every submission. So the same call gets the same answer, and in a class most
calls are the same: every student whose ``MultiHeadAttentionWrapper`` is right calls its heads on the
course's tensors with the heads the seed draws. The trusted side answers those from here: no relay to the
reference worker and back, no run there.

A batch keeps them for the next (``grading/suites/stored_answers.py``), for the same reference and machine.

Kept: ``ok`` answers only (never a ``$stale`` one, which says what the reference worker holds now). A
forward's answer names the graph the reference worker kept for its backward; given again from here, that name
may be spent. The backward that names it is then either a call asked before (answered from here) or answered
``$stale``, and the proxy runs the forward again with the gradients asked for, as when the graph was dropped.
"""
from __future__ import annotations

import collections
import hashlib

#: what the kept answers may hold in all, and the largest one kept (GPT-2's outputs are over a megabyte)
MAX_BYTES = 64 * 2**20
MAX_ANSWER = 2 * 2**20


class StandinAnswers:
    def __init__(self, max_bytes: int = MAX_BYTES, max_answer: int = MAX_ANSWER):
        self.max_bytes = max_bytes
        self.max_answer = max_answer
        self._answers: collections.OrderedDict[bytes, bytes] = collections.OrderedDict()
        self._bytes = 0
        self.hits = self.misses = self.added = 0
        self._used: set[bytes] = set()  # the answers given or put since the kept ones were preloaded

    @staticmethod
    def key(header: bytes, blob: bytes) -> bytes:
        digest = hashlib.blake2b(header, digest_size=32)
        digest.update(len(header).to_bytes(8, "big"))
        digest.update(blob)
        return digest.digest()

    def get(self, key: bytes) -> bytes | None:
        answer = self._answers.get(key)
        if answer is None:
            self.misses += 1
            return None
        self.hits += 1
        self._answers.move_to_end(key)
        self._used.add(key)
        return answer

    def put(self, key: bytes, header: bytes, answer: bytes) -> None:
        """Keep ``answer`` (a whole frame) if its header (``header``, JSON text) says it is an ``ok`` answer."""
        if len(answer) > self.max_answer or not _ok(header):
            return
        self.added += 1
        self._used.add(key)
        self._keep(key, answer)

    def preload(self, kept: list[tuple[bytes, bytes]]) -> None:
        """Answers an earlier batch kept (``stored_answers.load_standins``), oldest first: each an ``ok`` answer's
        whole frame, as ``put`` keeps them (anything else is left out)."""
        for key, answer in kept:
            if len(answer) <= self.max_answer and _ok(_header(answer)):
                self._keep(key, answer)

    def items(self) -> list[tuple[bytes, bytes]]:
        """(a call's key, its answer) for every answer kept, the least recently used first."""
        return list(self._answers.items())

    def used(self) -> list[tuple[bytes, bytes]]:
        """``items`` given or put since the kept ones were preloaded (what this process learned, or asked again)."""
        return [(key, answer) for key, answer in self._answers.items() if key in self._used]

    def _keep(self, key: bytes, answer: bytes) -> None:
        old = self._answers.pop(key, None)
        if old is not None:
            self._bytes -= len(old)
        self._answers[key] = answer
        self._bytes += len(answer)
        while self._bytes > self.max_bytes and self._answers:
            gone, answer = self._answers.popitem(last=False)
            self._bytes -= len(answer)
            self._used.discard(gone)


def _header(frame: bytes) -> bytes:
    """A whole frame's header (``wire.frame``: its length in 4 bytes, then the header); empty if it is not one."""
    size = int.from_bytes(frame[:4], "big")
    return frame[4:4 + size] if len(frame) >= 4 + size else b""


def _ok(header: bytes) -> bool:
    """Whether an answer's header is an ``ok`` answer: the reference server writes ``{"ok": true, ...}`` first."""
    return header.startswith(b'{"ok": true')
