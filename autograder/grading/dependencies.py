"""Which stand-ins a step's worker may hold: decided by the unit's order and the reference, never by the student.

A step is graded beside correct stand-ins of the steps *before it* in the unit, so that one bug costs points
once: the wrapper calls ``CausalAttention`` (its reference does too), and a student's ``SelfAttention_v1``
may call their own ``project`` and ``scaled_attention_weights`` (its reference does not). What the student's
code names plays no part: every earlier step is held, whatever the code names, and none of them is the
graded step's answer. Two rules keep it so:

- never a later step: a later step's stand-in computes the earlier ones (the delegation attack);
- never a stand-in whose reference reaches the graded step, directly or through another stand-in (that would
  hand the step its own answer), nor one whose reference reaches any step not before it.
"""
from __future__ import annotations


def _short(step: str) -> str:
    return step.split(".", 1)[1]


class StandinPolicy:
    """The stand-ins each step's worker may hold, and the steps each step builds on."""

    def __init__(self, reference_uses: dict[str, set[str]], order: list[str] | None = None):
        """``reference_uses``: step -> the names its reference code uses. A name resolves to a step of the
        same module first (``context_vector`` exists in two modules), else to the step of that name elsewhere.
        ``order``: the unit's steps in order (course.yml's); by default, ``reference_uses``' own order."""
        self.order = list(order if order is not None else reference_uses)
        #: steps no proxy can stand in for (grading/suites/proxied_functions.py): never held
        self.held_back: set[str] = set()
        #: (step, asked, held_back) -> what ``needs`` answers: asked before every case a submission runs
        self._needs: dict[tuple[str, frozenset, frozenset], frozenset[str]] = {}
        self._index = {s: i for i, s in enumerate(self.order)}
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

    def earlier(self, step: str) -> set[str]:
        """The steps before ``step`` in the unit (none for a step the unit does not list)."""
        index = self._index.get(step)
        return set() if index is None else set(self.order[:index])

    def _safe(self, step: str, other: str) -> bool:
        """Whether ``step``'s worker may hold ``other``'s stand-in: an earlier step whose reference reaches only
        steps before ``step`` (so never ``step`` itself, nor a later one)."""
        before = self.earlier(step)
        return other in before and self.closure.get(other, set()) <= before

    def needs(self, step: str, asked: set[str] = frozenset()) -> frozenset[str]:
        """What ``step``'s worker may hold: every earlier step of the unit that is safe beside it (``asked``,
        the stand-ins its own cases build, such as Exercise 3.1's two classes, are among them or refused), but
        those no proxy can stand in for (``held_back``). Worked out once for each step and ``asked``."""
        key = (step, frozenset(asked), frozenset(self.held_back))
        found = self._needs.get(key)
        if found is None:
            found = self._needs[key] = frozenset(o for o in self.earlier(step) | set(asked)
                                                 if self._safe(step, o) and o not in self.held_back)
        return found

    def builds_on(self, step: str, asked: set[str] = frozenset()) -> set[str]:
        """The steps ``step`` builds on in the reference: what its reference reaches and its cases build
        (``grade check`` shows it as blocked while one of those fails), among those it may hold."""
        wanted = self.closure.get(step, set()) | set(asked)
        for other in set(wanted):
            wanted |= self.closure.get(other, set())
        return {o for o in wanted if self._safe(step, o)}
