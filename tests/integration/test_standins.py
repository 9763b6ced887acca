"""Stand-ins are proxies: no reference code, in any form, in a student's process.

While a step is graded beside stand-ins (the wrapper beside ``CausalAttention``, GPT-2's settings beside
``MultiHeadAttention``, Exercise 3.1 beside both ``SelfAttention`` classes), the student's code walks
``gc`` and every frame of every thread, as a student would, for a code object whose file is neither the
student's nor an installed library's nor the kit's own sandbox code, and raises if it finds one. The
positive control plants one code object of a foreign file: the same walk must find it.

The stand-ins still do their job: one bug costs points once (a broken ``CausalAttention`` leaves the
wrapper's points alone), with gradients and seeded dropout through the proxies.
"""
from __future__ import annotations

import json
import shutil

import pytest

from .conftest import ROOT, run_grade

ALICE = ROOT / "samples" / "submissions" / "alice"
CAROL = ROOT / "samples" / "submissions" / "carol"  # a CausalAttention that masks after the softmax

BESIDE_STANDINS = ["multihead_attention.MultiHeadAttentionWrapper", "multihead_attention.gpt2_small_attention",
                   "trainable_attention.transfer_weights",
                   "trainable_attention.SelfAttention_v1"]  # beside the function stand-ins of the steps before it

_WALK = '''

def _foreign_code():
    """Every code object reachable from gc and from every frame of every thread, whose file is not ours,
    not an installed library's (site-packages, the standard library) and not the kit's sandbox code."""
    import gc, os, sys, sysconfig, types
    here = os.path.dirname(os.path.abspath(__file__))
    allowed = (here, sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
               sysconfig.get_paths()["platlib"], sys.base_prefix, "<frozen ")
    kit = (os.sep + "worker" + os.sep,)  # the worker package: the kit's own sandbox side
    found, seen = set(), set()

    def visit(code):
        if id(code) in seen:
            return
        seen.add(id(code))
        name = code.co_filename
        if not (name.startswith(allowed) or any(k in name for k in kit) or "site-packages" in name
                or name in ("<string>", "<stdin>")):
            found.add(name)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                visit(const)

    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType):
            visit(obj.__code__)
        elif isinstance(obj, types.CodeType):
            visit(obj)
        elif isinstance(obj, types.FrameType):
            visit(obj.f_code)
        elif isinstance(obj, (dict, list, tuple)):  # code objects are not tracked by gc: their holders are
            for value in list(obj.values() if isinstance(obj, dict) else obj):
                if isinstance(value, types.CodeType):
                    visit(value)
        elif isinstance(obj, type):
            for value in list(vars(obj).values()):
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if isinstance(value, types.FunctionType):
                    visit(value.__code__)
    for frame in sys._current_frames().values():
        while frame is not None:
            visit(frame.f_code)
            frame = frame.f_back
    return sorted(found)


def _scanned(function):
    def scanning(*args, **kwargs):
        found = _foreign_code()
        if found:
            raise RuntimeError("foreign code: " + ", ".join(found))
        return function(*args, **kwargs)
    return scanning
'''

_PLANT = '''
_PLANTED = compile("x = 1", "<stand-in planted by the control>", "exec")
'''

_WRAP = {
    "multihead_attention": '''
MultiHeadAttentionWrapper.__init__ = _scanned(MultiHeadAttentionWrapper.__init__)
gpt2_small_attention = _scanned(gpt2_small_attention)
''',
    "trainable_attention": '''
transfer_weights = _scanned(transfer_weights)
SelfAttention_v1.__init__ = _scanned(SelfAttention_v1.__init__)
''',
}


def _submission(folder, base=ALICE, plant=False):
    shutil.copytree(base, folder)
    for module, wrap in _WRAP.items():
        path = folder / f"{module}.py"
        path.write_text(path.read_text() + _WALK + (_PLANT if plant else "") + wrap)
    return folder


def _step_scores(results: dict) -> dict[str, tuple[float, float]]:
    steps: dict[str, list[float]] = {}
    for test in results["tests"]:
        step = test["name"].split(" ", 1)[0]
        got, most = steps.setdefault(step, [0.0, 0.0])
        steps[step] = [got + test["score"], most + test["max_score"]]
    return {k: tuple(v) for k, v in steps.items()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("standins")
    subs = root / "subs"
    _submission(subs / "walker")
    _submission(subs / "planted", plant=True)
    _submission(subs / "carol_walker", base=CAROL)
    shutil.copytree(CAROL, subs / "carol")
    out = root / "out"
    result = run_grade("autograde", str(subs), "--out", str(out), "--jobs", "2")
    assert result.returncode == 0, result.stderr
    return {p.name: json.loads((p / "results.json").read_text()) for p in out.iterdir()
            if (p / "results.json").exists()}


@pytest.mark.parametrize("step", BESIDE_STANDINS)
def test_no_code_of_the_reference_is_in_a_worker_beside_a_stand_in(graded, step):
    scores = _step_scores(graded["walker"])
    assert scores[step][0] == scores[step][1], [t["output"] for t in graded["walker"]["tests"]
                                                if t["name"].startswith(step)]


@pytest.mark.parametrize("step", BESIDE_STANDINS)
def test_the_walk_finds_a_planted_code_object(graded, step):
    """The positive control: the same walk, with one foreign code object planted, finds it."""
    scores = _step_scores(graded["planted"])
    assert scores[step][0] == 0, scores[step]
    assert any("foreign code" in t["output"] for t in graded["planted"]["tests"] if t["name"].startswith(step))


def test_the_walk_costs_no_points_anywhere_else(graded):
    assert graded["walker"]["score"] == 81


def test_one_bug_costs_points_once_through_the_proxies(graded):
    """carol's CausalAttention masks after the softmax: her wrapper, graded beside the stand-in (values,
    gradients and seeded dropout computed by the reference worker), keeps all its points."""
    for name in ("carol", "carol_walker"):
        scores = _step_scores(graded[name])
        assert scores["causal_attention.CausalAttention"][0] < scores["causal_attention.CausalAttention"][1]
        assert scores["multihead_attention.MultiHeadAttentionWrapper"] == (6.0, 6.0), name
        assert scores["multihead_attention.gpt2_small_attention"] == (2.0, 2.0), name
