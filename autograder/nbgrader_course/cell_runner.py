"""The checks that the nbgrader test cells call, inside the student's notebook: the notebook's runner.

The notebooks' checking helper, ``checking_helper.py`` beside them, is the ``autograder.feedback``
package (tolerances, comparisons, likely misconceptions, the messages: what ``grade check`` and the
hidden suites say too) followed by this file, pasted in by ``grade nbgrader`` (``helper.module_source``)
with the imports of one another removed, so a notebook needs nothing but torch. This file depends on torch, the standard
library and that package only, and has no ``from __future__`` import (the cell runs in an IPython
kernel). What is here is what only a notebook needs: calling the student's function or class in the
notebook's kernel, the values written into the test cells, and ``CheckFailed``.

Every check runs the student's function or class on one case and compares the answer with the
expected one, recorded from the reference solutions when the course was generated, with the same
functions the judges of ``grade check`` use on a worker's answer (``autograder/grading/judge.py``). A
failed check raises ``CheckFailed`` (an ``AssertionError``) whose lines are the judge's. nbgrader gives
a test cell its points when it runs without an error, so a check never returns a value: a number as a
test cell's last value would be read as partial credit.
"""
import base64
import os
import traceback

import torch

from autograder.feedback.compare import compare_values
from autograder.feedback.describe import kind_of
from autograder.feedback.dropout import dropout_gradient_problems, dropout_problems, module_dropout_problems
from autograder.feedback.gradients import NO_SUCH_PARAMETER, after_output, backward_state, gradient_problems
from autograder.feedback.messages import (NOT_ATTEMPTED, frozen_parameter, modified_in_place, nothing_raised,
                                          raised, refused_valid, should_be_parameter, wrong_exception)
from autograder.feedback.parameters import parameter_problems
from autograder.feedback.tolerance import Tolerance, tolerance_for_output

#: per step: ((rtol, atol) for float32, (rtol, atol) for float64); checking_helper.py fills it in
TOLERANCES = {}
DEFAULT_TOLERANCE = ((1e-4, 1e-5), (1e-7, 1e-9))
#: the file beside the notebooks holding the tensors too long to write out (``D``); checking_helper.py names it
DATA_FILE = "data.pt"
_DATA = {}


class CheckFailed(AssertionError):
    """One case of one step failed; the message says what to fix.

    In a notebook, IPython shows it as its message alone (``_render_traceback_``, IPython's hook for an
    exception's own traceback): the test cell above it shows which check failed, and the helper's frames,
    the student's exception it was raised from, and the helper's source lines would only push the
    message down. Outside IPython it is an ``AssertionError`` with its usual traceback.
    """

    def _render_traceback_(self):
        lines = str(self).splitlines() or [""]
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {lines[0]}", *lines[1:]]


# -- the values written into the test cells -------------------------------------------------------
def T(values, dtype="float32"):
    """A tensor written out in the cell: ``T([[0.43, 0.15], [0.55, 0.87]])``."""
    return torch.tensor(values, dtype=getattr(torch, dtype))


def D(key):
    """A tensor from the data file beside the notebook (a dict of tensors, written by ``torch.save``)."""
    if not _DATA:
        _DATA.update(torch.load(DATA_FILE, weights_only=True))
    return _DATA[key].clone()


def B(dtype, shape, data):
    """A tensor too long to write out: its raw little-endian bytes, base64-encoded."""
    dt = getattr(torch, dtype)
    raw = base64.b64decode(data)
    if not raw:
        return torch.empty(shape, dtype=dt)
    return torch.frombuffer(bytearray(raw), dtype=dt).reshape(shape).clone()


class Digest:
    """A tensor too large to ship (millions of weights): shape, dtype, sums and a sample of entries."""

    def __init__(self, shape, dtype, total, squares, sample):
        self.shape, self.dtype, self.total, self.squares, self.sample = list(shape), dtype, total, squares, sample

    def problems(self, got, what):
        if not isinstance(got, torch.Tensor):
            return [f"{what}: expected a tensor of shape {self.shape}, got {kind_of(got)}"]
        if list(got.shape) != self.shape:
            return [f"{what}: expected shape {self.shape}, got shape {list(got.shape)}"]
        if str(got.dtype).replace("torch.", "") != self.dtype:
            return [f"{what}: expected dtype {self.dtype}, got {str(got.dtype).replace('torch.', '')}"]
        flat = got.detach().double().flatten()
        bad = sum(1 for i, v in self.sample if abs(flat[i].item() - v) > 1e-5 + 1e-4 * abs(v))
        total, squares = flat.sum().item(), (flat * flat).sum().item()
        if bad or abs(total - self.total) > 1e-3 + 1e-5 * abs(self.total) \
                or abs(squares - self.squares) > 1e-3 + 1e-5 * abs(self.squares):
            return [f"{what}: the values differ from the expected ones ({bad} of {len(self.sample)} sampled entries differ)"]
        return []


def Gen(seed):
    """A ``torch.Generator`` seeded with ``seed``."""
    return torch.Generator().manual_seed(seed)


def Holder(params):
    """A module holding the given parameters by name: ``"W_query.weight"`` makes an ``nn.Linear`` W_query."""
    module = torch.nn.Module()
    children = {}
    for name, value in params:
        if "." in name:
            child, leaf = name.split(".", 1)
            children.setdefault(child, []).append((leaf, value))
        else:
            setattr(module, name, torch.nn.Parameter(value.clone()))
    for child, leaves in children.items():
        found = dict(leaves)
        weight = found.get("weight")
        if set(found) <= {"weight", "bias"} and weight is not None and weight.dim() == 2:
            layer = torch.nn.Linear(weight.shape[1], weight.shape[0], bias="bias" in found, dtype=weight.dtype)
            with torch.no_grad():
                layer.weight.copy_(weight)
                if "bias" in found:
                    layer.bias.copy_(found["bias"])
            setattr(module, child, layer)
        else:
            setattr(module, child, Holder(leaves))
    return module


# -- running the student's code -------------------------------------------------------------------
def _tolerance(step, output):
    """The tolerance of a whole answer, as the judges pick it: float64's when the output is float64."""
    f32, f64 = TOLERANCES.get(step, DEFAULT_TOLERANCE)
    return tolerance_for_output(output, Tolerance(*f32), Tolerance(*f64))


def _compare(got, expected, tol, public, what, likely=None):
    if isinstance(expected, Digest):
        return expected.problems(got, what)
    return compare_values(got, expected, tol, public, what, likely)


def _fail(step, count, case, lines, status="failed"):
    """The failure, headed as ``grade check`` and the hidden suites head it."""
    raise CheckFailed("\n".join([f"{step} [{count}] case {case!r}: {status}", *("  " + line for line in lines)]))


def _where(exc):
    """The innermost line of the student's own code in the traceback: not the helper's, torch's or Python's."""
    skip = (_where.__code__.co_filename, os.path.dirname(torch.__file__), os.path.dirname(os.__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(skip)]
    if not frames:
        return None
    last = frames[-1]
    cell = "ipykernel_" in last.filename or last.filename.startswith("<")
    return {"file": "your cell" if cell else os.path.basename(last.filename), "line": last.lineno, "function": last.name}


def _run(step, count, case, phase, call, public=True):
    """``call()``, with the student's exception turned into a failed check that says where it came from."""
    try:
        return call()
    except NotImplementedError:
        _fail(step, count, case, [NOT_ATTEMPTED], "not attempted")
    except Exception as exc:  # noqa: BLE001 - any error in the student's code fails this case
        error = {"type": type(exc).__name__, "message": str(exc)[:1000], "phase": phase, "where": _where(exc)}
        _fail(step, count, case, raised(error, public))


def _seed(seed):
    if seed is not None:
        torch.manual_seed(seed)


def _fresh(value):
    """A fresh copy of an input, so gradients never accumulate into the cell's own tensors."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_fresh(v) for v in value)
    return value


def _changed(before, now):
    """Whether an argument was modified in place (NaN equal to NaN), as the judges decide it."""
    now = now.detach()
    if now.shape != before.shape or now.dtype != before.dtype:
        return True
    return not torch.equal(now, before) and not bool(((now == before) | (now.isnan() & before.isnan())).all())


def _backward(output, upstream):
    """Backpropagate ``upstream`` when it can be; what ``backward_state`` says about it."""
    state = backward_state(output, upstream)
    if state == "done":
        (output * upstream.to(output.dtype)).sum().backward()  # = output.backward(upstream), minus a 1 s import
    return state


def check_function(fn, step, count, *, case, args, names=None, kwargs=None, seed=None, public=True,
                   expected=None, parameters=None, modules_after=None, grad=(), upstream=None,
                   expected_grads=None, likely=None):
    """Call ``fn(*args, **kwargs)`` (after ``torch.manual_seed(seed)``) and compare with ``expected``.

    ``parameters``: which outputs must be ``nn.Parameter``; ``modules_after``: the (name, value) parameters
    each module argument must hold after the call, in argument order; ``grad``: the arguments whose
    gradient is checked, for the fixed ``upstream`` gradient of the output.
    """
    args = _fresh(list(args))
    names = names or [f"argument {i + 1}" for i in range(len(args))]
    for i in grad:
        args[i].requires_grad_(True)
    snapshots = {i: a.detach().clone() for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    tol = _tolerance(step, expected)
    _seed(seed)
    output = _run(step, count, case, "call", lambda: fn(*args, **(kwargs or {})), public)
    lines = _compare(output, expected, tol, public, "output", likely)
    if modules_after is not None:
        mine = [[(n, p.detach().clone()) for n, p in a.named_parameters()] for a in args if isinstance(a, torch.nn.Module)]
        lines += compare_values(mine, modules_after, tol, public, "modules after")
    notes = []  # said, never a reason to fail: as the hidden suites say them (grading/judge.py)
    for i, must in enumerate(parameters or []):
        got = output[i] if isinstance(output, (tuple, list)) and i < len(output) else None
        if must and type(got) is not torch.nn.Parameter:
            notes.append(should_be_parameter(i))
        elif must and not got.requires_grad:
            notes.append(frozen_parameter(i))
    changed = [names[i] for i, before in snapshots.items() if _changed(before, args[i])]
    if changed:
        lines.append(modified_in_place(changed))
    if upstream is not None:
        state = _backward(output, upstream)
        inputs = [(names[i], args[i].grad, e) for i, e in (expected_grads or {}).items()]
        lines += after_output(lines, gradient_problems(state, inputs, [], tol, public))
    if lines:
        _fail(step, count, case, lines + notes)
    for note in notes:
        print(note)


def _build(cls, step, count, case, init, init_kwargs, seed, public=True):
    _seed(seed)
    return _run(step, count, case, "__init__", lambda: _module(cls, init, init_kwargs), public)


def _module(cls, init, init_kwargs):
    module = cls(*init, **(init_kwargs or {}))
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"{getattr(cls, '__name__', 'it')}(...) did not create an nn.Module")
    return module


def check_parameters(cls, step, count, *, case, init, seed, expected, init_kwargs=None, buffers=(),
                     total=None, public=True):
    """The parameters ``cls(*init)`` draws after ``torch.manual_seed(seed)``: names, order, shapes, values.

    ``expected``: (name, tensor) pairs, or (name, shape) when only shapes are compared.
    """
    module = _build(cls, step, count, case, init, init_kwargs, seed, public)
    mine = [(n, p.detach().clone()) for n, p in module.named_parameters()]
    lines = parameter_problems(expected, mine, _tolerance(step, None), public,
                               shapes_only=bool(expected) and all(isinstance(v, list) for _, v in expected),
                               expected_buffers=buffers,
                               my_buffers=[(n, list(b.shape)) for n, b in module.named_buffers()],
                               expect_count=total)
    if lines:
        _fail(step, count, case, lines)


def check_module(cls, step, count, *, case, init, x, seed, expected, init_kwargs=None, weights=None,
                 train=False, forward_seed=None, public=True, upstream=None, expected_grads=None,
                 expected_param_grads=None, likely=None, before=(), dropout=None):
    """Build ``cls(*init)``, load ``weights`` (the reference's), run ``forward(x)`` and compare.

    ``dropout``: (p, heads) of a training-mode call on one token, judged by its properties against ``expected``,
    the eval-mode answer: each head's output all zeros or ``expected`` / (1 - p).

    ``before``: (input, training, seed) of earlier calls on the same instance, made first (state a module
    keeps between calls shows on the judged one). With ``upstream``, also backpropagate it and compare the
    gradients w.r.t. x and every parameter.
    """
    module = _build(cls, step, count, case, init, init_kwargs, seed, public)
    own = dict(module.named_parameters())

    def load():
        missing = [n for n, _ in weights if n not in own]
        if missing:
            raise LookupError(f"your module has no parameter named {', '.join(missing)}")
        with torch.no_grad():
            for name, value in weights:
                if tuple(own[name].shape) != tuple(value.shape):
                    raise ValueError(f"parameter {name} has shape {list(own[name].shape)}, expected {list(value.shape)}")
                own[name].copy_(value)

    if weights:
        _run(step, count, case, "loading the reference weights", load, public)
    for earlier, training, earlier_seed in before:
        module.train(bool(training))
        _seed(earlier_seed)
        _run(step, count, case, "forward", lambda: module(_fresh(earlier)), public)
    module.train(train)
    x = _fresh(x)
    if upstream is not None:
        x.requires_grad_(True)
    before = x.detach().clone()
    tol = _tolerance(step, expected)
    _seed(forward_seed)
    output = _run(step, count, case, "forward", lambda: module(x), public)
    if dropout is not None:
        lines = module_dropout_problems(output, expected, dropout[0], dropout[1], public)
    else:
        lines = _compare(output, expected, tol, public, "output", likely)
    if _changed(before, x):
        lines.append(modified_in_place(["the input x"]))
    if upstream is not None:
        state = _backward(output, upstream)
        inputs = [("the input x", x.grad, (expected_grads or {}).get("x"))]
        params = [(n, own[n].grad if n in own else NO_SUCH_PARAMETER, e) for n, e in (expected_param_grads or {}).items()]
        lines += after_output(lines, gradient_problems(state, inputs, params, tol, public))
    if lines:
        _fail(step, count, case, lines)


def check_accepts(cls, step, count, *, case, init, refusals, init_kwargs=None, public=True):
    """``cls(*init)`` must not raise any of ``refusals``: these arguments are valid (grading/judge.py)."""
    try:
        cls(*init, **(init_kwargs or {}))
    except NotImplementedError:
        _fail(step, count, case, [NOT_ATTEMPTED], "not attempted")
    except Exception as exc:  # noqa: BLE001 - only the errors meant for invalid arguments fail this case
        if type(exc).__name__ in refusals:
            _fail(step, count, case, [refused_valid(case, type(exc).__name__, str(exc), public)])


def check_raises(cls, step, count, *, case, init, exception, init_kwargs=None, public=True, also_accepted=()):
    """``cls(*init)`` must raise the exception named ``exception`` (or one named in ``also_accepted``)."""
    try:
        cls(*init, **(init_kwargs or {}))
    except NotImplementedError:
        _fail(step, count, case, [NOT_ATTEMPTED], "not attempted")
    except Exception as exc:  # noqa: BLE001 - any exception is compared with the one expected
        if type(exc).__name__ != exception and type(exc).__name__ not in also_accepted:
            _fail(step, count, case, [wrong_exception(exception, type(exc).__name__, str(exc), public)])
        return
    _fail(step, count, case, [nothing_raised(exception)])


def check_dropout(fn, step, count, *, case, x, p, seed, needs_graph=False, upstream=None, public=True):
    """Dropout by its properties: each entry 0 or x / (1 - p), about 1 - p of them kept; with ``needs_graph``, the
    gradient for ``upstream`` that the output implies (as the hidden suites judge it: grading/judge.py)."""
    args = [x.detach().clone().requires_grad_(needs_graph), p]
    before = args[0].detach().clone()
    _seed(seed)
    out = _run(step, count, case, "call", lambda: fn(*args), public)
    lines = dropout_problems(out, x, p, public, modified=_changed(before, args[0]))
    if not lines and needs_graph:
        state = _backward(out, upstream)
        lines = dropout_gradient_problems(out, x, p, upstream, state, args[0].grad, public)
    if lines:
        _fail(step, count, case, lines)
