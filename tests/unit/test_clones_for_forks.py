"""``sandbox/zygote.ClonesForForks``: how a forked grading process (a ``--jobs`` process, a LocalCluster's
worker) takes its zygote clone, written once. Fake zygotes: what is asserted is who keeps and who forgets what."""
from __future__ import annotations

import os

import pytest

from autograder.sandbox.zygote import ClonesForForks


class FakeZygote:
    def __init__(self, name: str, fail_after: int | None = None):
        self.name, self.fail_after, self.made, self.children = name, fail_after, 0, []
        self.forgotten = self.closed = False

    def clone(self) -> FakeZygote:
        if self.fail_after is not None and self.made >= self.fail_after:
            raise RuntimeError("the grading zygote exited")
        self.made += 1
        self.children.append(FakeZygote(f"{self.name}.{self.made}"))
        return self.children[-1]

    def forget(self) -> None:
        self.forgotten = True

    def close(self) -> None:
        self.closed = True


def test_a_forked_process_keeps_its_own_clone_and_forgets_the_others_and_the_parent():
    parent = FakeZygote("z")
    clones = ClonesForForks(parent, 3)
    mine = clones.take(1)
    assert mine is clones.clones[1] and not mine.forgotten
    assert [c.forgotten for c in clones.clones] == [True, False, True] and parent.forgotten


def test_without_a_slot_each_process_takes_the_next_clone_even_across_fork():
    clones = ClonesForForks(FakeZygote("z"), 2)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.write(writer, clones.take().name.encode())
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(reader, 100) == b"z.1"
    assert clones.take().name == "z.2"  # the counter is shared with the forked process
    assert clones.take() is None  # a process forked after every clone is taken starts its own zygote


def test_withdrawn_clones_are_forgotten_here_and_none_is_left_for_a_later_fork():
    clones = ClonesForForks(FakeZygote("z"), 2)
    made = list(clones.clones)
    clones.withdraw()
    clones.close()
    assert all(c.forgotten and not c.closed for c in made)
    assert clones.take() is None


def test_clones_made_before_one_fails_are_closed():
    parent = FakeZygote("z", fail_after=2)
    with pytest.raises(RuntimeError):
        ClonesForForks(parent, 3)
    assert len(parent.children) == 2 and all(c.closed for c in parent.children)
