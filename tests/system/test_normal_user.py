"""A normal user grades a class without ``--trust-submissions``, and no submission gains anything by attacking.

As a user who is not root, the kit grades in a user namespace of its own (``userns``) where the kernel allows
unprivileged ones, else under Landlock (``landlock``); each level this machine has is tried (``AUTOGRADER_ISOLATION``
caps the level to reach ``landlock`` where ``userns`` works). The user's own copy of the kit and the course is in
their home, a second user's copy beside it, readable by all; the class is five: a thief of the reference (from disk,
or from a loopback service that hands it out), a writer that leaves its code in the user's home (the kit's
``solutions/`` too), ``/tmp`` and ``/dev/shm``, a reader of that stash, and two honest submissions. Every attack
scores what its control scores (the stubs, or alice for the writer), nothing is left where the writer wrote, and
the control run (``rlimits``, trusted, one job) shows each attack gaining where nothing stops it.

What the run leaves in /tmp and /dev/shm is told from what others leave there meanwhile as make demo's journey does
(tests/system/test_normal_user_journeys.py): as root the class is a user's of its own (``user_of_its_own``), whose
every new entry there is the run's; as a normal user, the suite's other tests are the same user, and the run's own
temporary folder (``TMPDIR``, a folder of its own in both cases) is what must be left empty.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support import isolation_attacks as attacks
from tests.support.local_users import (chown_tree, normal_user, other_user, owned, python_for, run_as, site_packages,
                                      temporary_folder, user_of_its_own)

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork") or os.uname().sysname != "Linux",
                                 reason="the sandbox's levels for a normal user are Linux's")]

NAMES = ["1_writer", "2_reader", "3_thief", "alice", "bob"]
#: what each scores where no attack gains anything: the writer is alice with a trick, the others' control the stubs
SOUND = {"1_writer": 81, "2_reader": 0, "3_thief": 0, "alice": 81, "bob": 78}


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    """The user's kit and class in their home, a second user's kit beside, which that user graded with before;
    removed afterwards."""
    alone = user_of_its_own()
    user, other = alone or normal_user(), other_user()
    home, theirs = user.home / "agx-course", other.home / "agx-course"
    for folder in (home, theirs):
        shutil.rmtree(folder, ignore_errors=True)
    attacks.kit_copy(theirs / "kit")
    attacks.correct(theirs / "alice")
    chown_tree(other, theirs)  # as that user's clone: world-readable, like a fresh one
    # that user has graded with it before (and root has, in this suite): whatever they left is theirs
    before, _ = _grade(other, theirs / "kit", theirs / "alice", theirs / "out", {})
    assert before.returncode == 0, before.stdout + before.stderr
    kit = attacks.kit_copy(home / "kit")
    places = [str(user.home), str(kit / "solutions"), "/tmp", "/dev/shm"]
    service = attacks.Service()
    hand_ins = home / "hand-ins"
    attacks.stash_writer(hand_ins / "1_writer", places)
    attacks.stash_reader(hand_ins / "2_reader", places)
    attacks.reference_thief(hand_ins / "3_thief", token="", port=service.port)
    for name in ("alice", "bob"):
        attacks.correct(hand_ins / name, name)
    chown_tree(user, home)
    try:
        yield user, kit, hand_ins, places, service, alone is not None
    finally:
        service.close()
        for path in attacks.stashes(places):
            path.unlink(missing_ok=True)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(theirs, ignore_errors=True)


def _grade(user, kit: Path, hand_ins: Path, out: Path, env: dict,
           *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    python = python_for(user)
    done = run_as(user, [python, "-m", "autograder.cli", "autograde", str(hand_ins), "--out", str(out), *extra],
                  cwd=kit, env={"PYTHONPATH": f"{site_packages()}:{kit}", **env})
    scores = {p.parent.name: json.loads(p.read_text())["score"] for p in out.glob("*/results.json")}
    return done, scores


@pytest.mark.parametrize("level", ["userns", "landlock"])
def test_a_normal_user_grades_a_class_without_trusting_it(classroom, level):
    user, kit, hand_ins, places, service, alone = classroom
    with socket.create_connection(("127.0.0.1", service.port)) as sock:  # the control: the service serves
        sock.sendall(b"simple_attention\n")
        assert b"def attention_scores" in b"".join(iter(lambda: sock.recv(65536), b""))
    visits = service.visits
    home_before = {p.name for p in user.home.iterdir()}
    shared_before = {d: owned(user, d) for d in ("/tmp", "/dev/shm")}
    out = user.home / "agx-course" / f"out-{level}"
    tmp = temporary_folder(user, "agx-class-tmp-")  # the run's TMPDIR
    try:
        done, scores = _grade(user, kit, hand_ins, out, {"AUTOGRADER_ISOLATION": level, "TMPDIR": str(tmp)})
        left_in_tmp = sorted(os.listdir(tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if f"isolation: {level}" not in done.stdout:
        lines = (done.stdout + done.stderr).strip().splitlines()
        pytest.skip(f"{level} is not available to a normal user here: {lines[-3:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert scores == SOUND, done.stdout
    assert service.visits == visits  # no worker reached it
    assert [str(p) for p in attacks.stashes(places) if p.exists()] == []
    assert {p.name for p in user.home.iterdir()} - home_before <= {".cache"}  # the kept reference answers only
    assert not list(user.home.rglob("agx-stash-*"))
    assert left_in_tmp == []  # nothing of the run's left in its temporary folder
    for folder, before in shared_before.items():  # nor in /tmp and /dev/shm, where only the run is the user
        assert not alone or owned(user, folder) - before - {str(tmp)} == set(), folder


def test_the_same_class_gains_where_nothing_stops_it(classroom):
    """The control: at rlimits (trusted, one job, in order) the thief reads the user's own reference and the reader
    the writer's stash; untrusted, rlimits refuses the class in one message."""
    user, kit, hand_ins, places, _, _ = classroom
    refused, scores = _grade(user, kit, hand_ins, user.home / "agx-course" / "refused",
                             {"AUTOGRADER_ISOLATION": "rlimits"})
    assert refused.returncode == 2 and scores == {} and "--trust-submissions" in refused.stderr, refused.stderr
    done, scores = _grade(user, kit, hand_ins, user.home / "agx-course" / "trusted",
                          {"AUTOGRADER_ISOLATION": "rlimits"}, "--trust-submissions", "--jobs", "1")
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        assert scores["3_thief"] == 81 and scores["2_reader"] > 0, scores
        assert any(p.exists() for p in attacks.stashes(places))
    finally:
        for path in attacks.stashes(places):
            path.unlink(missing_ok=True)
