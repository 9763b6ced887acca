"""Nothing of the student's runs on a worker's way out, between the end of the student's call and its answer's bytes
(``worker/seal.py``, ``worker/runtime.py``): code that ran there could rewrite the answer and undo its own patch
before the integrity check looks. Each test has a control that shows its trick does run where nothing stops it:
through ``wire.pack``, which looks its helpers up as it goes, or with torch's Python hooks on. End to end, the red
team's ``forge_facts_on_the_way_out`` (tests/test_adversarial.py) scores what its honest control scores."""
from __future__ import annotations

import dis
import gc
import json
import signal
import struct
import subprocess
import sys
import types
import warnings

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from autograder.grading import judge
from autograder.worker import child, runtime, seal, seccomp, wire

from .conftest import ROOT

pytestmark = pytest.mark.unit


def frame_parts(frame: bytes) -> tuple[bytes, bytes]:
    (hlen,) = struct.unpack(">I", frame[:4])
    (blen,) = struct.unpack(">Q", frame[4 + hlen:12 + hlen])
    return frame[4:4 + hlen], frame[12 + hlen:12 + hlen + blen]


def read(frame: bytes):
    return wire.unpack(*frame_parts(frame))


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return type(b) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


MESSAGES = [
    {"ok": True, "output": torch.rand(3, 4), "output_facts": {"class": "Tensor", "parameter": False,
                                                             "requires_grad": True, "grad_fn": "MmBackward0"},
     "args_after": [torch.arange(6).view(2, 3).T, None], "modules_after": [],
     "param_grads": {"W_query.weight": torch.rand(2, 2, dtype=torch.float64)}},
    {"x": (1, 2.5, float("nan"), float("-inf"), float("inf"), None, True, "é\n\"", [(), []])},
    {"b": torch.tensor([True, False]), "e": torch.empty(0, 3), "s": torch.arange(12.0).view(3, 4)[:, 1::2],
     "h": torch.full((2,), 0.5, dtype=torch.float16), "i8": torch.tensor([-3], dtype=torch.int8),
     "u8": torch.tensor([250], dtype=torch.uint8), "i32": torch.tensor([7], dtype=torch.int32),
     "i16": torch.tensor([-7], dtype=torch.int16), "p": torch.nn.Parameter(torch.rand(2)), "g": torch.rand(2, requires_grad=True)},
    {"changed": []}, {"import_errors": {"simple_attention": {"type": "SyntaxError", "message": "x", "where": None}}},
    {"ok": False, "error": {"type": "Tampering", "message": "m", "where": None, "phase": "the step",
                            "not_attempted": False, "tampered": True}},
]


@pytest.mark.parametrize("message", MESSAGES, ids=range(len(MESSAGES)))
def test_seal_makes_the_frame_the_wire_reads_back_as_wire_pack_s(message):
    assert same(read(wire.pack(message)), read(seal.pack(message)))
    assert same(read(seal.pack(message)), read(wire.pack(message)))  # and the control: ``same`` tells them apart
    assert not same(read(seal.pack({"a": torch.zeros(2)})), read(seal.pack({"a": torch.ones(2)})))


def test_rebinding_what_the_wire_looks_up_changes_wire_pack_but_not_seal_pack(monkeypatch):
    """Three rebindings a student's call can make and undo on the way out: torch.Tensor's methods, json's encoder
    class and the packer module's own functions (the builtins: the next test). ``wire.pack`` (the control) sends
    what they say; ``seal.pack`` sends the same bytes as before them."""
    message = {"ok": True, "output": torch.rand(3), "args_after": [torch.rand(3)]}
    wire_pack, seal_pack = wire.pack, seal.pack  # the packers themselves, as a worker binds them before student code
    wire_before, seal_before = wire_pack(message), seal_pack(message)
    forged = torch.zeros(3)
    monkeypatch.setattr(torch.Tensor, "detach", lambda self: forged, raising=False)
    real_encode = json.JSONEncoder.encode
    monkeypatch.setattr(json.JSONEncoder, "encode", lambda self, o: real_encode(self, {**o, "args_after": []}))
    for space in (vars(wire), vars(seal)):
        for name, value in list(space.items()):
            if isinstance(value, types.FunctionType) and name != "pack":
                monkeypatch.setitem(space, name, lambda *a, **k: {"forged": True})
    try:
        sealed = seal_pack(message)
        wire_forged = None
        try:
            wire_forged = wire_pack(message)
        except Exception:  # noqa: BLE001 - the control may break outright: it still is not the unpatched bytes
            pass
    finally:
        monkeypatch.undo()
    assert sealed == seal_before
    assert wire_forged != wire_before


def code_objects(function) -> list:
    found, todo = [], [function.__code__]
    while todo:
        code = todo.pop()
        found.append(code)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def lookups(function, kinds) -> list[str]:
    return [f"{code.co_name}: {ins.opname} {ins.argval}" for code in code_objects(function)
            for ins in dis.get_instructions(code) if ins.opname in kinds]


def test_the_way_out_looks_up_no_global_and_no_builtin():
    """What runs after the student's call reads no module global and no builtin (which student code can rebind for
    one call and put back): only its arguments and defaults. The seal reads no attribute either. Control: ``wire.pack``
    and ``wire.encode`` read globals and attributes."""
    for function in (seal.pack, seal._walk, seal.raw, seal._blob, seal._unsendable):
        assert lookups(function, {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR", "LOAD_METHOD", "STORE_GLOBAL"}) == []
    for function in (runtime.run, runtime._facts, runtime._frozen, runtime._sealed):
        assert lookups(function, {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL"}) == []
    assert lookups(wire.pack, {"LOAD_GLOBAL"}) and lookups(wire.encode, {"LOAD_ATTR", "LOAD_METHOD"})


def test_a_value_s_own_methods_never_run_in_seal():
    called = []

    class Key(str):
        def __str__(self):
            called.append("__str__")
            return "forged"

        def __hash__(self):
            called.append("__hash__")
            return str.__hash__(self)

    class Number(int):
        def __int__(self):
            called.append("__int__")
            return 0

        def __repr__(self):
            called.append("__repr__")
            return "0"

    message = {Key("name"): [Number(7), Key("text")]}
    called.clear()
    assert read(seal.pack(message)) == {"name": [7, "text"]}
    assert called == []

    class Other:
        def __getattribute__(self, name):
            called.append(name)
            return object.__getattribute__(self, name)

    with pytest.raises(TypeError, match="cannot send a Other"):
        seal.pack({"x": Other()})
    assert called == []


def test_a_tensor_that_dispatches_to_python_is_refused_before_any_operation_on_it():
    called = []

    class Wrapper(torch.Tensor):
        @staticmethod
        def __new__(cls, elem):
            return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype)

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            called.append(func)
            return torch.zeros(3)

    value = Wrapper(torch.ones(3))
    torch._C.TensorBase.detach(value)  # the control: an operation on it runs its Python
    assert called
    called.clear()
    with pytest.raises(TypeError, match="dispatch to Python"):
        seal.pack({"grad": value})
    assert called == []


def workspace(tmp_path, source: str) -> runtime.Workspace:
    module = types.ModuleType("steps")
    exec(compile(source, str(tmp_path / "steps.py"), "exec"), module.__dict__)  # noqa: S102 - the test's own code
    return runtime.prepare(tmp_path, {"steps": module})


MODIFIES_THEN_HIDES = '''
import torch
CALLED = []


class AsItWas(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        CALLED.append(getattr(func, "__name__", func))
        if getattr(func, "__name__", "") in ("detach", "clone"):
            return torch.ones(3)  # the input as it was
        with torch._C.DisableTorchFunction():
            return func(*args, **(kwargs or {}))


class FunctionMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        CALLED.append(getattr(func, "__name__", func))
        if getattr(func, "__name__", "") in ("detach", "clone"):
            return torch.ones(3)
        return func(*args, **(kwargs or {}))


MODES = []


def by_class(x):
    out = x * 2
    x.mul_(3)
    x.__class__ = AsItWas
    CALLED.clear()
    return out


def by_mode(x):
    out = x * 2
    x.mul_(3)
    mode = FunctionMode()
    mode.__enter__()
    MODES.append(mode)
    CALLED.clear()
    return out
'''


@pytest.mark.parametrize("target", ["by_class", "by_mode"])
def test_a_modified_input_shows_whatever_hooks_the_call_left_behind(tmp_path, target):
    """A call that modifies its input in place, then gives it a ``__torch_function__`` class or leaves a torch
    function mode on, whose detach and clone hand back the input as it was. The answer still says the input changed,
    and nothing of the student's ran once the call returned. Control: the same hook, where torch's hooks are on, does
    hand back the forged input."""
    ws = workspace(tmp_path, MODIFIES_THEN_HIDES)
    steps = ws.modules["steps"]
    request = {"kind": "function", "target": f"steps.{target}", "args": [torch.ones(3)], "kwargs": {}}
    try:
        ok, sealed = runtime.run(request, ws, seal.pack)
        assert steps.CALLED == []  # (before ``read``, whose operations a mode left on would see)
        after = read(sealed)["args_after"][0]
        assert ok and torch.equal(after, torch.full((3,), 3.0))
        forged = torch._C.TensorBase.clone(torch.full((3,), 3.0).as_subclass(steps.AsItWas)) if target == "by_class" \
            else torch._C.TensorBase.clone(torch.full((3,), 3.0))
        assert torch.equal(forged, torch.ones(3)) and steps.CALLED  # the control
    finally:
        for mode in steps.MODES:
            mode.__exit__(None, None, None)


def test_the_way_out_keeps_nothing_in_cells_student_code_could_refill():
    """A local that a nested function or comprehension names lives in a cell, which ``gc.get_referrers`` finds and
    ``cell_contents`` refills. What runs after the student's call must not read one made before it."""
    assert runtime.run.__code__.co_cellvars == ()
    assert {"args", "after", "answer", "sent", "output", "facts", "frozen", "sealed", "seal", "gc_off", "backward",
            "params", "grad_args", "modules_after", "bound", "hooks"}.isdisjoint(runtime._run.__code__.co_cellvars)
    assert {"pack", "write", "run", "check", "check_code", "check_defaults", "machinery", "failed_",
            "error_"}.isdisjoint(child.serve.__code__.co_cellvars)
    # the control: a comprehension's names are cells, as the assertions above assume
    assert "clone" in runtime._run.__code__.co_cellvars


def test_torch_dispatch_modes_are_off_while_the_answer_is_made():
    """A dispatch mode left on sees every operation of the student's call, and none after it returns (the facts'
    detach and clone, the seal's). Control: outside ``run`` it sees the same clone."""
    seen = []

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    def step(x):
        out = x + 1
        seen.append("the call returns")
        return out

    ws = types.SimpleNamespace(resolve=lambda target, standin=False: step, folder=None)
    x = torch.ones(2)
    with Mode():
        torch._C.TensorBase.clone(x)
        assert seen == ["aten.clone.default"]  # the control
        seen.clear()
        ok, sealed = runtime.run({"kind": "function", "target": "steps.step", "args": [x], "kwargs": {}},
                                 ws, seal.pack)
    assert ok and torch.equal(read(sealed)["output"], torch.full((2,), 2.0))
    assert seen[-1] == "the call returns" and "aten.add.Tensor" in seen


AFTER_THE_CALL = '''
import gc, sys, weakref
import torch
RAN = []
SAVED = []
KEEP = []


def forge_answers():
    """Every answer dict in memory says the arguments were as they were before the call."""
    for o in gc.get_objects():
        if type(o) is dict and o.get("ok") is True and "args_after" in o:
            o["args_after"] = [SAVED[-1].clone()]


def rebinds_a_global(x):
    """Modifies x, then rebinds ``type`` in the caller's module for one lookup, which puts x back as it was."""
    SAVED.append(x.detach().clone())
    out = x * 2
    x.mul_(3)
    space = sys._getframe(1).f_globals

    def type_hook(value, *rest):
        del space["type"]
        x.copy_(SAVED[-1])
        RAN.append("type")
        return type(value, *rest)
    space["type"] = type_hook
    return out


def forges_from_a_finalizer(x):
    """Modifies x, and rewrites the answer once the grader lets go of x (a weakref's callback)."""
    SAVED.append(x.detach().clone())
    out = x * 2
    x.mul_(3)

    def finalizer(_):
        RAN.append("finalizer")
        forge_answers()
    KEEP.append(weakref.ref(x, finalizer))
    return out


def forges_from_tensor_del(x):
    """Modifies x, then gives torch.Tensor a __del__ that rewrites the answer's first argument as it was: it runs
    as soon as any tensor wrapper the grader makes on its way out is let go of (a third review)."""
    SAVED.append(x.detach().clone())
    out = x * 2
    x.mul_(3)
    original = SAVED[-1].numpy().tobytes()

    def forge(self):
        for o in gc.get_objects():
            if type(o) is dict and o.get("ok") is True and type(o.get("args_after")) is list and o["args_after"]:
                first = o["args_after"][0]
                if type(first) is tuple and len(first) == 4:
                    RAN.append("__del__")
                    o["args_after"][0] = (first[0], first[1], first[2], original)
    torch.Tensor.__del__ = forge
    KEEP.append("Tensor.__del__")
    return out


class Dropped:
    """Put in the grader's answer of before the call: its __del__ forges whatever answer the grader's frame holds
    when that dict is let go of."""

    def __init__(self, frame):
        self.frame = frame

    def __del__(self):
        RAN.append("dropped")
        answer = self.frame.f_locals.get("answer")
        if isinstance(answer, dict):
            answer.clear()
            answer.update({"ok": True, "output": torch.ones(3), "args_after": [SAVED[-1]]})


def forges_when_its_answer_is_dropped(x):
    """Modifies x, and plants an object in the grader's answer dict of before the call (a third review)."""
    SAVED.append(x.detach().clone())
    out = x * 2
    x.mul_(3)
    frame = sys._getframe(1)
    snapshot = frame.f_locals  # the frame's own copy of its locals: cleared, so it holds the dict no longer
    answer = snapshot["answer"]
    snapshot.clear()
    answer["planted"] = Dropped(frame)
    return out


class Shape:
    """A shape whose __iter__ rewrites the answer being sealed (its args_after) as it was."""

    def __iter__(self):
        RAN.append("__iter__")
        frame = sys._getframe(1)
        while frame is not None:
            message = frame.f_locals.get("message")
            if type(message) is dict and "args_after" in message:
                message["args_after"][:] = [SAVED[-1]]
                break
            frame = frame.f_back
        return iter([3])


def forges_a_raw_tensor(x):
    """Modifies x, then puts a tuple marked as a tensor the grader read itself (its marker is readable from the
    seal's defaults) in the answer of before the call, which the grader copies (a fourth review)."""
    SAVED.append(x.detach().clone())
    out = x * 2
    x.mul_(3)
    frame = sys._getframe(1)
    marker = frame.f_globals["seal_mod"].RAW
    frame.f_locals["answer"]["params"] = [(marker, "F32", Shape(), b"")]
    return out


def forges_from_a_kernel(x):
    """Modifies x, then registers Python kernels for aten's clone, detach and alias on CPU that answer the saved copy
    for x (torch.library: torch's dispatcher runs them, whatever Python hooks are off)."""
    SAVED.append(x.detach().clone())
    out = x * 2
    x.mul_(3)
    pointer = x.data_ptr()
    lib = torch.library.Library("aten", "IMPL")

    def clone(t, memory_format=None):
        RAN.append("kernel")
        if t.data_ptr() == pointer:
            return SAVED[-1].new_empty(SAVED[-1].shape).copy_(SAVED[-1])
        return torch.empty_like(t).copy_(t)
    lib.impl("clone", clone, "CPU")
    KEEP.append(lib)
    return out
'''


@pytest.mark.parametrize("target", ["rebinds_a_global", "forges_from_a_finalizer", "forges_from_a_kernel",
                                    "forges_from_tensor_del", "forges_when_its_answer_is_dropped",
                                    "forges_a_raw_tensor"])
def test_code_that_runs_after_the_call_cannot_hide_a_modified_input(tmp_path, target):
    """The red team's second and third reviews: after the student's call returns, a global of the runtime rebound for
    one lookup (found by a frame walk), a weakref's callback when the grader lets go of the input, a Python kernel in
    torch's dispatcher, a ``torch.Tensor.__del__``, or an object planted in the grader's own answer dict whose
    ``__del__`` runs when that dict is let go of, each put back or forge the input. The arguments are read as bytes the
    moment the call returns, with no operator of the dispatcher, and nothing is let go of until the answer is sealed.
    Control: each trick does run (after the bytes are made)."""
    ws = workspace(tmp_path, AFTER_THE_CALL)
    steps = ws.modules["steps"]
    request = {"kind": "function", "target": f"steps.{target}", "args": [torch.ones(3)], "kwargs": {}}
    try:
        ok, sealed = runtime.run(request, ws, seal.pack)
        if target == "forges_from_a_kernel":
            steps.RAN.clear()
            torch._C.TensorBase.clone(torch.ones(1))  # the control: the kernel runs for any clone
        if target == "forges_when_its_answer_is_dropped":
            gc.collect()  # the frame the planted object holds: let go of now
        if target == "forges_a_raw_tensor":  # the forged tuple is refused: the answer is an error, its __iter__ unread
            assert not ok and steps.RAN == [] and "forged tensor" in read(sealed)["error"]["message"]
            list(steps.Shape())  # the control: reading it as a list runs it
        assert steps.RAN, "the trick never ran: the test would pass for nothing"
    finally:
        for lib in steps.KEEP:
            if isinstance(lib, torch.library.Library):
                lib._destroy()
        if "__del__" in vars(torch.Tensor):
            del torch.Tensor.__del__
    answer = read(sealed)
    if target != "forges_a_raw_tensor":
        assert ok and torch.equal(answer["args_after"][0], torch.full((3,), 3.0))


def test_an_answer_that_leaves_an_argument_out_counts_it_as_modified():
    """A worker says every argument after the call (``args_after``): a shorter list leaves one out, and the judge
    counts it as modified. An answer with no list at all (the reference's own) is judged on its values alone."""
    sent = torch.ones(3)
    case = {"request": {"kind": "function", "args": [sent, 2, sent.clone()]}}
    assert judge.mutated(case, {"ok": True, "args_after": [sent.clone(), None, sent.clone()]}) == []  # control
    assert judge.mutated(case, {"ok": True, "args_after": [sent.clone()]}) == [2]
    assert judge.mutated(case, {"ok": True, "args_after": []}) == [0, 2]
    assert judge.mutated(case, {"ok": True}) == []


SIGNAL_TIMER = '''
import signal
import torch
FORGED = []


def arm(x):
    """A timer whose handler, every 50 us, looks for the answer being made and puts x's first bytes back."""
    original = x.detach().clone().numpy().tobytes()

    busy, ticks = [], []

    def handler(signum, frame):
        if busy:  # one at a time: a handler the timer interrupts is not run again inside itself
            return
        ticks.append(1)
        if len(ticks) > 5000:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return
        busy.append(1)
        try:
            look(frame)
        finally:
            busy.clear()

    def look(frame):
        while frame is not None:
            found = {"_facts": "fresh", "_sealed": "answer", "pack": "message"}.get(frame.f_code.co_name)
            answer = frame.f_locals.get(found) if found else None
            after = frame.f_locals.get("out") if frame.f_code.co_name == "_frozen" else (
                answer.get("args_after") if type(answer) is dict else None)
            if type(after) is list and after and type(after[0]) is tuple and len(after[0]) == 4:
                after[0] = after[0][:3] + (original,)
                FORGED.append(frame.f_code.co_name)
                signal.setitimer(signal.ITIMER_REAL, 0)
                return
            frame = frame.f_back
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.00005, 0.00005)


def modifies_then_times(x):
    out = x * 2
    arm(x)
    x.mul_(3)
    return out
'''


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no interval timers (Windows)")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # "Signal 14 ignored": as meant
def test_a_signal_handler_of_the_student_s_runs_no_more_once_the_call_returns(tmp_path):
    """A fifth review's: a timer's handler runs between two bytecodes of whatever runs when it fires, the way out
    included, and there it put a modified input back. The worker ignores every signal handler but its own from the
    call's return until the bytes exist. Control: without the worker's own handlers given, the same timer forges."""
    ws = workspace(tmp_path, SIGNAL_TIMER)
    request = {"kind": "function", "target": "steps.modifies_then_times", "args": [torch.ones(3)], "kwargs": {}}
    own = runtime.handlers()
    try:
        said = []
        for given in (own, None):  # the worker's way, then the control
            for _ in range(20):
                ok, sealed = runtime.run({**request, "args": [torch.ones(3)]}, ws, seal.pack, given)
                signal.setitimer(signal.ITIMER_REAL, 0)
                said.append((given is None, torch.equal(read(sealed)["args_after"][0], torch.full((3,), 3.0))))
                signal.signal(signal.SIGALRM, own[runtime._SIGNALS.index(int(signal.SIGALRM))])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    assert all(honest for control, honest in said if not control)
    assert any(not honest for control, honest in said if control)  # the control: the timer does forge


DROPPED_HANDLER = '''
import signal
import sys
import torch
RAN = []


class Handler:
    """A signal handler whose __del__ runs ``then`` when the grader lets go of it."""

    def __init__(self, then):
        self.then = then

    def __call__(self, *args):
        pass

    def __del__(self):
        RAN.append("__del__")
        self.then()


def puts_its_input_back(x):
    out = x * 2
    saved = x.detach().clone()
    x.mul_(3)
    signal.signal(signal.SIGUSR1, Handler(lambda: x.copy_(saved)))
    return out


def raises_then_says_ok(x):
    frame = sys._getframe(0)

    def forge():
        f = frame
        while f is not None:
            failure = f.f_locals.get("failure")
            if type(failure) is dict:
                failure.clear()
                failure.update({"ok": True, "output": torch.ones(3), "args_after": []})
                return
            f = f.f_back
    signal.signal(signal.SIGUSR1, Handler(forge))
    raise RuntimeError("a bug")
'''


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="no SIGUSR1 (Windows)")
@pytest.mark.parametrize("target", ["puts_its_input_back", "raises_then_says_ok"])
def test_a_handler_taken_off_runs_no_code_until_the_bytes_exist(tmp_path, target):
    """A sixth review's: the student's signal handler, taken off on the way out, was freed there and its __del__ put
    the modified input back, or turned an error answer into ok. The handlers taken off are kept until the bytes exist.
    Control: the __del__ does run, once the answer is made."""
    ws = workspace(tmp_path, DROPPED_HANDLER)
    steps = ws.modules["steps"]
    own = runtime.handlers()
    try:
        ok, sealed = runtime.run({"kind": "function", "target": f"steps.{target}", "args": [torch.ones(3)],
                                  "kwargs": {}}, ws, seal.pack, own)
    finally:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    gc.collect()
    assert steps.RAN == ["__del__"]  # the control
    answer = read(sealed)
    if target == "puts_its_input_back":
        assert ok and torch.equal(answer["args_after"][0], torch.full((3,), 3.0))
    else:
        assert not ok and answer["ok"] is False and answer["error"]["type"] == "RuntimeError"


NO_HANDLERS = """
import signal, sys
from autograder.worker import seccomp, syscalls
syscalls.prctl(syscalls.PR_SET_NO_NEW_PRIVS, 1)
said = []
for when in ("before", "after"):
    if when == "after" and not seccomp.no_signal_handlers():
        said.append("no filter")
        break
    try:
        signal.signal(signal.SIGUSR1, lambda *a: None)
        said.append(when + ": set")
    except OSError as exc:
        said.append(when + ": refused")
print(said)
"""


@pytest.mark.skipif(not seccomp.supported(), reason="the filter is described for x86_64 only")
def test_where_a_filter_can_be_installed_a_worker_s_student_code_sets_no_signal_handler():
    """A worker installs a second seccomp filter before the submission is imported (child.serve): ``rt_sigaction``
    refused, so no Python signal handler of the student's exists to run on the way out. Control: before the filter,
    the same call sets one."""
    done = subprocess.run([sys.executable, "-c", NO_HANDLERS], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['before: set', 'after: refused']"


WARNS = '''
import sys, warnings, torch
RAN = []
ORIGINAL = []


def hook(*args, **kwargs):
    """warnings.showwarning: put the input back in the answer being made."""
    RAN.append("showwarning")
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "_facts":
            after = frame.f_locals["fresh"]["args_after"]
            after[0] = after[0][:3] + (ORIGINAL[-1],)
            return
        frame = frame.f_back


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.full((3,), 2.0))

    def forward(self, x):
        out = x.clone() * self.w
        ORIGINAL.append(x.detach().numpy().tobytes())
        with torch.no_grad():
            x.mul_(3)
        warnings.simplefilter("always")
        warnings.showwarning = hook
        return out

    def named_parameters(self, *args, **kwargs):
        yield from super().named_parameters(*args, **kwargs)
        if "callee" in sys._getframe(1).f_locals:  # the grader's own read, just before the call
            yield "not_a_leaf", torch.ones(1, requires_grad=True) * 2  # its .grad makes torch warn
'''


def test_a_warning_torch_gives_on_the_way_out_calls_no_code_of_the_student_s(tmp_path):
    """A seventh review's: a parameter that is no leaf makes torch warn when its .grad is read, through Python's
    warnings, whose showwarning student code can set; from there it put a modified input back. The way out reads
    .grad only where torch keeps one. Control: reading it directly does call the student's hook."""
    ws = workspace(tmp_path, WARNS)
    steps = ws.modules["steps"]
    shown, filters = warnings.showwarning, warnings.filters[:]
    try:
        ok, sealed = runtime.run({"kind": "module", "target": "steps.M", "init_args": [], "forward_args": [torch.ones(3)],
                                  "grad_args": [0], "upstream": torch.ones(3)}, ws, seal.pack, runtime.handlers())
        assert steps.RAN == []
        answer = read(sealed)
        assert ok and torch.equal(answer["args_after"][0], torch.full((3,), 3.0))
        assert answer["param_grads"]["not_a_leaf"] is None
        (torch.ones(1, requires_grad=True) * 2).grad  # noqa: B018 - the control: torch warns, the hook runs
        assert steps.RAN == ["showwarning"]
    finally:
        warnings.showwarning = shown
        warnings.filters[:] = filters


VIEW_REBUILT = '''
import sys, torch
RAN = []; ORIG = []; KEEP = []

def unfold_kernel(t, dimension, size, step):
    f = sys._getframe()
    while f is not None:
        if f.f_code.co_name == "_facts" and "args_after" in f.f_locals["fresh"]:
            after = f.f_locals["fresh"]["args_after"]
            after[0] = after[0][:3] + (ORIG[-1],)
            RAN.append("forged in _facts")
            break
        f = f.f_back
    n = (t.shape[dimension] - size) // step + 1
    return torch.ops.aten.as_strided.default(t, (n, size), (step * t.stride(0), t.stride(0)), t.storage_offset())

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.full((3,), 2.0))
        self.b = torch.ones(3, requires_grad=True)
        torch._C._set_view_replay_enabled(True)
        self.v = self.b.unfold(0, 3, 1)          # a view that keeps its view_fn (replayed through the dispatcher)
        torch._C._set_view_replay_enabled(False)

    def named_parameters(self, *a, **k):
        yield from super().named_parameters(*a, **k)
        yield "v", self.v

    def forward(self, x):
        out = x.clone() * self.w
        ORIG.append(x.detach().numpy().tobytes())
        with torch.no_grad():
            x.mul_(3)                              # the in-place modification to hide
            self.b.add_(0)                         # bumps the view's version: its grad_fn is rebuilt when next read
        lib = torch.library.Library("aten", "IMPL"); lib.impl("unfold", unfold_kernel, "CPU"); KEEP.append(lib)
        return out
'''


def test_a_view_s_grad_fn_is_not_read_where_torch_would_rebuild_it_through_the_dispatcher(tmp_path):
    """An eighth review's: a view's grad_fn (and so its is_leaf) is rebuilt by replaying its view through torch's
    dispatcher once its base has changed, where a Python kernel of the student's sat (torch.library) and put a
    modified input back from _facts. The way out reads neither of a view. Control: reading the view's grad_fn
    runs the kernel."""
    ws = workspace(tmp_path, VIEW_REBUILT)
    steps = ws.modules["steps"]
    try:
        ok, sealed = runtime.run({"kind": "module", "target": "steps.M", "init_args": [], "forward_args": [torch.ones(3)],
                                  "grad_args": [0], "upstream": torch.ones(3)}, ws, seal.pack, runtime.handlers())
        assert steps.RAN == []
        answer = read(sealed)
        assert ok and torch.equal(answer["args_after"][0], torch.full((3,), 3.0))
        assert answer["param_grads"]["v"] is None
        for lib in steps.KEEP:  # the student's kernel, gone: the control's own below
            lib._destroy()
        steps.KEEP.clear()
        module = steps.M()
        with torch.no_grad():
            module.b.add_(0)
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("unfold", lambda t, d, size, step: steps.RAN.append("kernel") or torch.ops.aten.as_strided.default(
            t, (1, size), (step * t.stride(0), t.stride(0)), t.storage_offset()), "CPU")
        steps.KEEP.append(lib)
        module.v.grad_fn  # noqa: B018 - the control: the grad_fn is rebuilt, through the kernel
        assert steps.RAN == ["kernel"]
    finally:
        for lib in steps.KEEP:
            lib._destroy()
