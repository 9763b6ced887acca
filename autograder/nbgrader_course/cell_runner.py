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
import linecache
import os
import traceback
import warnings

import torch

from autograder.feedback.catalogue import likely_line
from autograder.feedback.compare import compare_values
from autograder.feedback.describe import kind_of
from autograder.feedback.dropout import dropout_gradient_problems, dropout_problems, module_dropout_problems
from autograder.feedback.gradients import NO_SUCH_PARAMETER, after_output, backward_state, gradient_problems
from autograder.feedback.messages import (NOT_ATTEMPTED, frozen_parameter, modified_in_place, nothing_raised,
                                          raised, refused_valid, should_be_parameter, wrong_exception)
from autograder.feedback.parameters import modules_after_problems, parameter_problems
from autograder.feedback.redact import Hidden, names_in_source, sizes_of
from autograder.feedback.runtime_errors import error_hints
from autograder.feedback.structure import structure_hints
from autograder.feedback.tolerance import Tolerance, tolerance_for_output
from autograder.feedback.warned import of_definition, unsaid, warning_hints, warning_lines
from autograder.worker.unregistered import unregistered

#: per step: ((rtol, atol) for float32, (rtol, atol) for float64); checking_helper.py fills it in
TOLERANCES = {}
DEFAULT_TOLERANCE = ((1e-4, 1e-5), (1e-7, 1e-9))
#: the file beside the notebooks holding the tensors too long to write out (``D``); checking_helper.py names it
DATA_FILE = "data.pt"
_DATA = {}
#: the warnings about the student's cells said in this kernel, each once (``warned.unsaid``)
_SAID = {}
#: the check under way: how its case is shown (``_shown``) and the warnings its calls raised so far
_CHECK = {"public": True, "warnings": []}


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
            return [f"{what}: the values differ from the expected ones ({bad} of {len(self.sample)} sampled entries "
                    "differ)"]
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


def _fail(step, count, case, lines, status="failed", notes=()):
    """The failure, headed as ``grade check`` and the hidden suites head it: the lines, the likely mistakes the
    student's warnings name, the notes, then those warnings (each once in the kernel), as the judges say them."""
    seen = _CHECK["warnings"]
    if status == "failed":
        named = {getattr(line, "mid", None) for line in lines}
        lines = [*lines, *(h for h in warning_hints(seen) if h.mid not in named)]
    lines = [*lines, *notes, *unsaid(warning_lines(seen, _CHECK["public"]), _SAID)]
    raise CheckFailed("\n".join([f"{step} [{count}] case {case!r}: {status}", *("  " + line for line in lines)]))


def _passed(notes=()):
    """A passing check's notes, printed. The warnings its calls raised are kept for a check that fails (each is said
    once in the kernel, where it explains a failure): a passing test cell says nothing of them."""
    for note in notes:
        print(note)


def _functions_of(target):
    """The student's functions ``target`` is made of: itself, or a class's methods."""
    if isinstance(target, type):
        return [v for v in vars(target).values() if hasattr(v, "__code__")]
    return [target] if hasattr(target, "__code__") else []


def _own_files(target):
    """The files (cells) that define ``target`` and what its code refers to: the student's, not Python's, torch's, an
    installed package's or ours."""
    code = []
    for fn in _functions_of(target):
        code.append(fn.__code__)
        for value in list(getattr(fn, "__globals__", {}).values()):
            if hasattr(value, "__code__"):
                code.append(value.__code__)
            elif isinstance(value, type) and not value.__module__.startswith(("torch", "builtins")):
                code += [v.__code__ for v in vars(value).values() if hasattr(v, "__code__")]
    skip = (_own_files.__code__.co_filename, os.path.dirname(torch.__file__), os.path.dirname(os.__file__))
    return sorted({c.co_filename for c in code if not c.co_filename.startswith(skip)
                   and "site-packages" not in c.co_filename and "dist-packages" not in c.co_filename})


def _compiled(target):
    """The warnings Python raised compiling the cell (or file) that defines ``target``, as it did when the cell ran,
    compiled again (never run): those of ``target``'s own definition (``warned.of_definition``)."""
    found = []
    for filename in sorted({fn.__code__.co_filename for fn in _functions_of(target)}):
        source = "".join(linecache.getlines(filename))
        if not source:
            continue
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            try:
                compile(source, filename, "exec")
            except (SyntaxError, ValueError):
                continue
        seen = [_as_seen(r) for r in records if str(r.filename) == filename]
        found += of_definition(seen, source, getattr(target, "__name__", ""))
    return found


def _shown(public, target, *values):
    """How a case is shown: ``True``, or on a hidden case what may be shown of it (``redact.Hidden``): the student's
    own names, from the source of the cells that define what is checked, and the case's own sizes."""
    if public:
        return True
    names = set()
    for filename in _own_files(target):
        names |= names_in_source("".join(linecache.getlines(filename)))
    return Hidden(names, sizes_of(*values))


def _begin(public, target, *values):
    """A check begins: how its case is shown; the warnings of compiling ``target``'s definition."""
    _CHECK.update(public=_shown(public, target, *values), warnings=_compiled(target))
    return _CHECK["public"]


def _caught(records):
    """The warnings of a call that point at the student's own code (a cell, a file of theirs), as the worker's
    warnings are said: file, line, category, message, and the line itself."""
    skip = (_caught.__code__.co_filename, os.path.dirname(torch.__file__), os.path.dirname(os.__file__))
    for record in records:
        filename = str(record.filename)
        if filename.startswith(skip) or filename.startswith("<frozen"):
            continue
        seen = _as_seen(record)
        if seen not in _CHECK["warnings"]:
            _CHECK["warnings"].append(seen)


def _as_seen(record):
    """A warning about the student's code as the feedback says it (``warned.warning_lines``)."""
    filename = str(record.filename)
    cell = "ipykernel_" in filename or filename.startswith("<")
    return {"file": "your cell" if cell else os.path.basename(filename), "line": record.lineno,
            "category": record.category.__name__, "message": str(record.message)[:500],
            "text": linecache.getline(filename, record.lineno).strip()}


def _where(exc):
    """The innermost line of the student's own code in the traceback: not the helper's, torch's or Python's."""
    skip = (_where.__code__.co_filename, os.path.dirname(torch.__file__), os.path.dirname(os.__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(skip)]
    if not frames:
        return None
    last = frames[-1]
    cell = "ipykernel_" in last.filename or last.filename.startswith("<")
    return {"file": "your cell" if cell else os.path.basename(last.filename), "line": last.lineno,
            "function": last.name}


def _run(step, count, case, phase, call, public=True, init=None, x=None, module=None):
    """``call()``, with the student's exception turned into a failed check that says where it came from, and the
    likely cause (``runtime_errors``: from a module's ``init`` arguments (None for a function), the input ``x``, the
    line it was raised at;
    where loading the reference weights failed, what the ``module``'s __init__ left unregistered)."""
    once = torch.is_warn_always_enabled()
    try:
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            torch.set_warn_always(True)  # torch's warn-once warnings (x.T on a batch) on every check, as in a worker
            try:
                return call()
            finally:
                torch.set_warn_always(once)
                _caught(records)
    except NotImplementedError:
        _fail(step, count, case, [NOT_ATTEMPTED], "not attempted")
    except Exception as exc:  # noqa: BLE001 - any error in the student's code fails this case
        error = {"type": type(exc).__name__, "message": str(exc)[:1000], "phase": phase, "where": _where(exc)}
        hints = error_hints(error, module=init is not None, init_args=init or (),
                            x_shape=list(x.shape) if isinstance(x, torch.Tensor) else None,
                            source_line=_student_line(exc), warnings=_CHECK["warnings"])
        lines = [*raised(error, public), *(likely_line(h) for h in hints)]
        if phase == "loading the reference weights" and module is not None:
            lines += structure_hints(unregistered(module), public)
        _fail(step, count, case, lines)


def _student_line(exc):
    """The text of the innermost line of the student's own code in the traceback (the line ``_where`` names)."""
    skip = (_where.__code__.co_filename, os.path.dirname(torch.__file__), os.path.dirname(os.__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(skip)]
    if not frames:
        return None
    return linecache.getline(frames[-1].filename, frames[-1].lineno).strip() or None


def _seed(seed):
    """``torch.manual_seed`` for the CPU generator, the only one a CPU build draws from: the same draws, without the
    lazy seeding of other devices that formats a stack trace on every call (a millisecond each)."""
    if seed is not None:
        torch.default_generator.manual_seed(int(seed))


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
                   expected=None, parameters=None, modules_after=None, modules_before=None, grad=(), upstream=None,
                   expected_grads=None, likely=None):
    """Call ``fn(*args, **kwargs)`` (after ``torch.manual_seed(seed)``) and compare with ``expected``.

    ``parameters``: which outputs must be ``nn.Parameter``; ``modules_after``: the (name, value) parameters
    each module argument must hold after the call, in argument order (``modules_before``: as they were built);
    ``grad``: the arguments whose gradient is checked, for the fixed ``upstream`` gradient of the output.
    """
    public = _begin(public, fn, args, kwargs, expected)
    args = _fresh(list(args))
    names = names or [f"argument {i + 1}" for i in range(len(args))]
    for i in grad:
        args[i].requires_grad_(True)
    snapshots = {i: a.detach().clone() for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    tol = _tolerance(step, expected)
    _seed(seed)
    output = _run(step, count, case, "call", lambda: fn(*args, **(kwargs or {})), public, x=args[0] if args else None)
    lines = _compare(output, expected, tol, public, "output", likely)
    if modules_after is not None:
        mine = [[(n, p.detach().clone()) for n, p in a.named_parameters()] for a in args
                if isinstance(a, torch.nn.Module)]
        modules = [names[i] for i, a in enumerate(args) if isinstance(a, torch.nn.Module)]
        lines += modules_after_problems(mine, modules_after, modules, tol, public, modules_before)
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
        _fail(step, count, case, lines, notes=notes)
    _passed(notes)


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
    public = _begin(public, cls, init, init_kwargs)
    module = _build(cls, step, count, case, init, init_kwargs, seed, public)
    mine = [(n, p.detach().clone()) for n, p in module.named_parameters()]
    lines = parameter_problems(expected, mine, _tolerance(step, None), public,
                               shapes_only=bool(expected) and all(isinstance(v, list) for _, v in expected),
                               expected_buffers=buffers,
                               my_buffers=[(n, list(b.shape)) for n, b in module.named_buffers()],
                               expect_count=total, unregistered=unregistered(module))
    if lines:
        _fail(step, count, case, lines)
    _passed()


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
    public = _begin(public, cls, init, init_kwargs, x, [call[0] for call in before], expected)
    module = _build(cls, step, count, case, init, init_kwargs, seed, public)
    own = dict(module.named_parameters())

    def load():
        missing = [n for n, _ in weights if n not in own]
        if missing:
            raise LookupError(f"your module has no parameter named {', '.join(missing)}")
        with torch.no_grad():
            for name, value in weights:
                if tuple(own[name].shape) != tuple(value.shape):
                    raise ValueError(f"parameter {name} has shape {list(own[name].shape)}, expected "
                                     f"{list(value.shape)}")
                own[name].copy_(value)

    if weights:
        _run(step, count, case, "loading the reference weights", load, public, module=module)
    for earlier, training, earlier_seed in before:
        module.train(bool(training))
        _seed(earlier_seed)
        _run(step, count, case, "forward", lambda: module(_fresh(earlier)), public, init=init, x=x)
    module.train(train)
    x = _fresh(x)
    if upstream is not None:
        x.requires_grad_(True)
    before = x.detach().clone()
    tol = _tolerance(step, expected)
    _seed(forward_seed)
    output = _run(step, count, case, "forward", lambda: module(x), public, init=init, x=x)
    if dropout is not None:
        lines = module_dropout_problems(output, expected, dropout[0], dropout[1], public)
    else:
        lines = _compare(output, expected, tol, public, "output", likely)
    if _changed(before, x):
        lines.append(modified_in_place(["the input x"]))
    if upstream is not None:
        state = _backward(output, upstream)
        inputs = [("the input x", x.grad, (expected_grads or {}).get("x"))]
        params = [(n, own[n].grad if n in own else NO_SUCH_PARAMETER, e)
                  for n, e in (expected_param_grads or {}).items()]
        lines += after_output(lines, gradient_problems(state, inputs, params, tol, public))
    if lines:
        _fail(step, count, case, lines)
    _passed()


def _constructed(cls, init, init_kwargs):
    """``cls(*init)``: the exception it raised, or None; the warnings it raised noted for the check."""
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        try:
            cls(*init, **(init_kwargs or {}))
        except Exception as exc:  # noqa: BLE001 - the student's exception is the check's answer
            return exc
        finally:
            _caught(records)
    return None


def check_accepts(cls, step, count, *, case, init, refusals, init_kwargs=None, public=True):
    """``cls(*init)`` must not raise any of ``refusals``: these arguments are valid (grading/judge.py)."""
    public = _begin(public, cls, init, init_kwargs)
    exc = _constructed(cls, init, init_kwargs)
    if isinstance(exc, NotImplementedError):
        _fail(step, count, case, [NOT_ATTEMPTED], "not attempted")
    if exc is not None and type(exc).__name__ in refusals:
        _fail(step, count, case, [refused_valid(case, type(exc).__name__, str(exc), public)])
    _passed()


def check_raises(cls, step, count, *, case, init, exception, init_kwargs=None, public=True, also_accepted=()):
    """``cls(*init)`` must raise the exception named ``exception`` (or one named in ``also_accepted``)."""
    public = _begin(public, cls, init, init_kwargs)
    exc = _constructed(cls, init, init_kwargs)
    if isinstance(exc, NotImplementedError):
        _fail(step, count, case, [NOT_ATTEMPTED], "not attempted")
    if exc is None:
        _fail(step, count, case, [nothing_raised(exception)])
    if type(exc).__name__ != exception and type(exc).__name__ not in also_accepted:
        _fail(step, count, case, [wrong_exception(exception, type(exc).__name__, str(exc), public)])
    _passed()


def check_dropout(fn, step, count, *, case, x, p, seed, needs_graph=False, upstream=None, public=True):
    """Dropout by its properties: each entry 0 or x / (1 - p), about 1 - p of them kept; with ``needs_graph``, the
    gradient for ``upstream`` that the output implies (as the hidden suites judge it: grading/judge.py)."""
    public = _begin(public, fn, [x, p])
    args = [x.detach().clone().requires_grad_(needs_graph), p]
    before = args[0].detach().clone()
    _seed(seed)
    out = _run(step, count, case, "call", lambda: fn(*args), public, x=x)
    lines = dropout_problems(out, x, p, public, modified=_changed(before, args[0]))
    if not lines and needs_graph:
        state = _backward(out, upstream)
        lines = dropout_gradient_problems(out, x, p, upstream, state, args[0].grad, public)
    if lines:
        _fail(step, count, case, lines)
    _passed()
