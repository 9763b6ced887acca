"""Which stand-ins a step's worker may hold: decided by the reference alone, never by the student's code.

A step is graded beside correct stand-ins of the other steps that its *reference* code calls (the
wrapper's ``CausalAttention``, GPT-2's ``MultiHeadAttention``), so that one bug costs points once. What
the student's code names plays no part: dead code naming every step gets no reference code at all. And a
step never sits beside a stand-in whose reference contains the step itself (that would hand it its own
answer).
"""
from __future__ import annotations


def _short(step: str) -> str:
    return step.split(".", 1)[1]


class StandinPolicy:
    """The stand-ins each step's worker may hold, from the reference's own calls and the suite's requests."""

    def __init__(self, reference_uses: dict[str, set[str]]):
        """``reference_uses``: step -> the names its reference code uses. A name resolves to a step of the
        same module first (``context_vector`` exists in two modules), else to the step of that name elsewhere."""
        by_name: dict[str, list[str]] = {}
        for step in reference_uses:
            by_name.setdefault(_short(step), []).append(step)

        def resolve(step: str, name: str) -> list[str]:
            candidates = by_name.get(name, [])
            same = [c for c in candidates if c.split(".", 1)[0] == step.split(".", 1)[0]]
            return same or candidates

        direct = {s: {o for n in names for o in resolve(s, n) if o != s} for s, names in reference_uses.items()}
        #: step -> every step its reference reaches, directly or through another stand-in
        self.closure: dict[str, set[str]] = {}
        for step in direct:
            seen, todo = set(), list(direct[step])
            while todo:
                other = todo.pop()
                if other not in seen:
                    seen.add(other)
                    todo += direct.get(other, ())
            self.closure[step] = seen

    def needs(self, step: str, asked: set[str] = frozenset()) -> set[str]:
        """What ``step``'s worker may hold: what its reference calls, plus the stand-ins its own cases build
        (``asked``: Exercise 3.1 transfers weights between two classes), never the step itself nor a step
        whose reference contains it."""
        wanted = self.closure.get(step, set()) | set(asked)
        for other in set(wanted):  # a stand-in comes with what its own reference calls
            wanted |= self.closure.get(other, set())
        return {o for o in wanted if o != step and step not in self.closure.get(o, set())}
