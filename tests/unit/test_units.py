"""Fast unit tests of the pieces every path relies on: the control protocol, waiting for a process, the
results model, the stand-in policy. ``pytest -m unit`` runs these (and the other unit modules) alone."""
from __future__ import annotations

import os
import socket
import types

import pytest

from autograder.grading.dependencies import StandinPolicy
from autograder.outputs import results
from autograder.worker import hygiene, protocol, standins, waits


def test_a_request_carries_its_descriptors_and_an_answer_is_one_line():
    ours, theirs = socket.socketpair()
    read, write = os.pipe()
    try:
        protocol.request(ours, {"op": "spawn", "n": 1}, [write])
        message, fds = protocol.receive(theirs, 2)
        assert message == {"op": "spawn", "n": 1} and len(fds) == 1
        os.write(fds[0], b"x")
        assert os.read(read, 1) == b"x"
        protocol.reply(theirs, {"ok": True})
        assert protocol.answer(ours.makefile("rb")) == {"ok": True}
        theirs.close()
        assert protocol.receive(ours, 1) == (None, [])
    finally:
        for fd in (read, write, *locals().get("fds", [])):
            try:
                os.close(fd)
            except OSError:
                pass
        ours.close()


def test_how_a_process_ended_is_data():
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os._exit(3)
    assert waits.reap(pid, 5.0) == {"state": "exit", "code": 3}
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.kill(os.getpid(), 9)
    assert waits.reap(pid, 5.0) == {"state": "signal", "signal": "SIGKILL"}
    assert waits.reap(pid, 0.0) == protocol.GONE


def test_a_running_child_is_waited_for_at_most_the_timeout():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child: waits until told
        os.read(read, 1)
        os._exit(0)
    try:
        assert waits.reap(pid, 0.05) == protocol.RUNNING
    finally:
        os.write(write, b"x")
        assert waits.reap(pid, 5.0) == {"state": "exit", "code": 0}
        os.close(read)
        os.close(write)


@pytest.mark.parametrize("data, says", [
    ({"score": "a"}, "no numeric top-level 'score'"),
    ({"score": 1, "tests": [{"name": "x"}]}, "a test in 'tests' has no numeric 'max_score'"),
    ({"score": 1, "extra_data": {"submitted_at": "yesterday"}}, "is not an ISO-8601 date and time"),
    ({"score": 1, "extra_data": {"submitted_at": "2025-01-01T00:00:00"}}, "has no UTC offset"),
    ([], "not a JSON object"),
])
def test_the_results_model_says_what_is_wrong(data, says):
    with pytest.raises(results.ResultsError, match=says):
        results.parse(data)


def test_the_results_model_reads_what_the_writer_writes(tmp_path):
    data = {"score": 2, "tests": [{"name": "m.f values: F", "max_score": 1, "score": 1, "status": "passed"},
                                  {"name": "m.f randomized: F", "max_score": 1, "score": 1, "status": "passed"}],
            "extra_data": {"submitted_at": "2026-12-10T14:03:22+01:00", "grader_errors": 0}}
    results.write_atomic(tmp_path / "results.json", data)
    read = results.read(tmp_path / "results.json")
    assert read.max_score == 2 and read.tests[0].step == "m.f" and read.tests[1].count == "randomized"
    assert read.extra_data.submitted_time.utcoffset().total_seconds() == 3600


def test_stand_ins_are_the_earlier_steps_never_the_step_itself():
    # unit order: A, Causal, Wrapper (its reference calls Causal), MHA, GPT (calls MHA), Late (calls Wrapper), Z
    order = ["m.A", "m.Causal", "m.Wrapper", "m.MHA", "m.GPT", "m.Late", "m.Z"]
    uses = {"m.A": {"torch"}, "m.Causal": {"nn"}, "m.Wrapper": {"Causal", "torch"}, "m.MHA": set(), "m.GPT": {"MHA"},
            "m.Late": {"Wrapper"}, "m.Z": {"Z2"}}
    policy = StandinPolicy(uses, order)
    # every earlier step, also those the reference does not call (the student's code may call them)
    assert policy.needs("m.Causal") == {"m.A"}
    assert policy.needs("m.Wrapper") == {"m.A", "m.Causal"}
    assert policy.needs("m.GPT") == {"m.A", "m.Causal", "m.Wrapper", "m.MHA"}
    assert policy.needs("m.A") == set()  # the unit's first step: nothing before it
    assert all(step not in policy.needs(step) for step in order)  # never the step itself
    assert policy.needs("m.Causal", asked={"m.Wrapper", "m.GPT"}) == {"m.A"}  # never a later step, even if asked
    # what the reference calls, for grade check's "blocked": not every earlier step
    assert policy.builds_on("m.Wrapper") == {"m.Causal"} and policy.builds_on("m.MHA") == set()
    assert policy.builds_on("m.GPT") == {"m.MHA"}
    # a step out of the unit's order, whose reference reaches the graded step: never beside it
    swapped = StandinPolicy({"m.Wrapper": {"Causal"}, "m.Causal": set(), "m.X": set()},
                            ["m.Wrapper", "m.X", "m.Causal"])
    assert swapped.needs("m.Causal") == {"m.X"}  # the wrapper is earlier, but its reference contains Causal
    assert swapped.needs("m.X") == set()  # nor one that reaches a later step (Causal, after X)
    assert swapped.needs("m.Causal", asked={"m.Wrapper"}) == {"m.X"}
    # control: the same wrapper, in the unit's own order, is held beside the steps after it
    assert StandinPolicy({"m.Wrapper": {"Causal"}, "m.Causal": set(), "m.X": set()},
                         ["m.Causal", "m.Wrapper", "m.X"]).needs("m.X") == {"m.Causal", "m.Wrapper"}
    # a cycle (B's reference reaches A, A's reaches B): neither beside the other
    cycle = StandinPolicy({"m.A": {"B"}, "m.B": {"A"}}, ["m.A", "m.B"])
    assert cycle.needs("m.B") == set() and cycle.needs("m.A") == set()


def test_a_zygote_or_host_whose_trusted_side_is_gone_ends_quietly():
    """Ctrl-C kills a batch job while its host is answering: the answer is dropped and the next read says the
    side is gone (a fresh clone's `make test` showed a BrokenPipeError traceback to the user); control: the bare
    send raises."""
    from autograder.worker import protocol  # noqa: PLC0415 - this test alone

    ours, theirs = socket.socketpair()
    theirs.close()
    with pytest.raises(BrokenPipeError):
        ours.sendall(b"{}\n")
    protocol.reply(ours, {"pid": 1})
    assert protocol.receive(ours, 4) == (None, [])
    ours.close()


def test_a_fingerprint_after_stand_ins_are_substituted_is_the_one_just_taken_with_the_modules_again():
    """Hygiene's baseline after a step's stand-ins are substituted (worker/child.py) is the fingerprint taken just
    before, with the student's modules' globals taken again: the same as a whole new one. Control: without them
    taken again, the substitution shows as a change of the student's modules."""
    class CausalAttention:
        pass

    module = types.ModuleType("causal_attention")
    module.CausalAttention = module.alias = CausalAttention
    modules = {"causal_attention": module}
    before = hygiene.fingerprint(modules)
    objects = standins.build({"causal_attention.CausalAttention": "class"}, lambda message: {})
    assert standins.substitute(modules, objects) == ["causal_attention.CausalAttention", "causal_attention.alias"]
    assert hygiene.changes(hygiene.with_modules(before, modules), hygiene.fingerprint(modules)) == []
    assert hygiene.changes(before, hygiene.fingerprint(modules)) == ["your modules' globals"]  # control
