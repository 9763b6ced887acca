"""The checks that the nbgrader test cells call, inside the student's notebook.

This file is the source of the notebooks' locked "checking helper" cell: ``grade nbgrader`` pastes it in
as it is, so a notebook needs nothing but torch. It depends on torch and the standard library only, and
has no ``from __future__`` import (the cell runs in an IPython kernel).

Every check runs the student's function or class from the notebook on one case and compares the answer
with the expected one, recorded from the reference solutions when the course was generated. A failed
check raises ``CheckFailed`` (an ``AssertionError``): the step, the count, the case and what differs
(shape, dtype, where the values differ, and for the documents' own cases the expected and the student's
values). nbgrader gives a test cell its points when it runs without an error, so a check never returns
a value: a number as a test cell's last value would be read as partial credit.
"""
import base64
import math

import torch

#: per step: ((rtol, atol) for float32, (rtol, atol) for float64); the notebook fills it in
TOLERANCES = {}
DEFAULT_TOLERANCE = ((1e-4, 1e-5), (1e-7, 1e-9))
LOOSE = (1e-3, 1e-4)  # to recognise a known mistake's result


class CheckFailed(AssertionError):
    """One case of one step failed; the message says what to fix."""


# -- the values written into the test cells -------------------------------------------------------
def T(values, dtype="float32"):
    """A tensor written out in the cell: ``T([[0.43, 0.15], [0.55, 0.87]])``."""
    return torch.tensor(values, dtype=getattr(torch, dtype))


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
            return [f"{what}: expected a tensor of shape {self.shape}, got {_kind(got)}"]
        if list(got.shape) != self.shape:
            return [f"{what}: expected shape {self.shape}, got shape {_shape(got)}"]
        if _dtype(got) != self.dtype:
            return [f"{what}: expected dtype {self.dtype}, got {_dtype(got)}"]
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


# -- describing values ----------------------------------------------------------------------------
def _shape(t):
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _kind(value):
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {_shape(value)}, dtype {_dtype(value)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


def _values(t, limit=8):
    flat = t.detach().double().flatten().tolist()
    return "[" + ", ".join(f"{v:.4f}" for v in flat[:limit]) + (", ..." if len(flat) > limit else "") + "]"


def _tolerance(step, t):
    f32, f64 = TOLERANCES.get(step, DEFAULT_TOLERANCE)
    return f64 if isinstance(t, torch.Tensor) and t.dtype == torch.float64 else f32


def _close(got, expected, tol):
    rtol, atol = tol
    g, e = got.detach().double(), expected.detach().double()
    both_nan = torch.isnan(g) & torch.isnan(e)
    same_inf = torch.isinf(g) & torch.isinf(e) & (torch.sign(g) == torch.sign(e))
    return both_nan | same_inf | ((g - e).abs() <= atol + rtol * e.abs())


def _same(got, expected, tol):
    return tuple(got.shape) == tuple(expected.shape) and bool(_close(got, expected, tol).all())


def _hints(got, expected, likely):
    """The likely misconception: a known mistake this result reproduces, or what the values suggest."""
    known = [label for label, wrong in (likely or {}).items()
             if isinstance(wrong, torch.Tensor) and tuple(wrong.shape) == tuple(got.shape) and _same(got, wrong, LOOSE)]
    if known:
        return known
    hints = []
    if not got.dtype.is_floating_point or got.shape != expected.shape:
        return hints
    if torch.isnan(got).any() and not torch.isnan(expected).any():
        return ["your result contains NaN: an exp that overflowed, a division by zero, or -inf - -inf?"]
    if torch.isinf(got).any() and not torch.isinf(expected).any():
        return ["your result contains inf: a mask value (-inf) that was not turned into 0 by a softmax?"]
    if got.dim() >= 2 and _same(got, expected.transpose(-1, -2), LOOSE):
        return ["your result is the transpose of the expected one: check the order of a matrix product or .T"]
    e, g = expected.double(), got.detach().double()
    nonzero = e.abs() > 1e-8
    if nonzero.sum() > 1:
        ratio = g[nonzero] / e[nonzero]
        r = ratio.mean().item()
        if (ratio - r).abs().max().item() < 1e-3 * max(1.0, abs(r)) and abs(r - 1) > 1e-3:
            hints.append(f"your values are the expected ones times {r:.4g}: a scaling (by sqrt(d_k)?) missing or applied the wrong way?")
    if e.dim() >= 2 and e.shape[-1] == e.shape[-2]:
        upper = torch.triu(torch.ones(e.shape[-2:], dtype=torch.bool), diagonal=1)
        if (e[..., upper].abs() < 1e-12).all() and (g[..., upper].abs() > 1e-6).any():
            hints.append("your result is not zero above the diagonal: future tokens are not masked out")
        ones = torch.ones(e.shape[:-1], dtype=torch.float64)
        if torch.allclose(e.sum(-1), ones, atol=1e-4) and not torch.allclose(g.sum(-1), ones, atol=1e-4):
            hints.append("your rows do not sum to 1: the softmax (or the renormalization) runs over the wrong dim, or is missing")
    return hints


def compare(got, expected, step, public, what, likely=None):
    """The problems with ``got`` as an answer ``expected``; an empty list when they agree."""
    if isinstance(expected, Digest):
        return expected.problems(got, what)
    if isinstance(expected, torch.Tensor):
        if type(got) is torch.nn.Parameter:
            got = got.data
        if not isinstance(got, torch.Tensor):
            if isinstance(got, (int, float)) and not isinstance(got, bool) and expected.dim() == 0:
                got = torch.tensor(float(got), dtype=expected.dtype)
            else:
                return [f"{what}: expected {_kind(expected)}, got {_kind(got)}"]
        if tuple(got.shape) != tuple(expected.shape):
            return [f"{what}: expected shape {_shape(expected)}, got shape {_shape(got)}"]
        lines = []
        if got.dtype != expected.dtype:
            lines.append(f"{what}: expected dtype {_dtype(expected)}, got {_dtype(got)}")
            if not got.dtype.is_floating_point:
                return lines
        tol = _tolerance(step, expected)
        if _same(got, expected, tol):
            return lines
        bad = (~_close(got, expected, tol)).nonzero()
        line = f"{what}: values differ at {len(bad)} of {expected.numel()} entries"
        if expected.dim() == 0:
            lines.append(line + (f": expected {expected.item():.6g}, got {got.item():.6g}" if public else ""))
        else:
            diff = (got.detach().double() - expected.double()).abs().nan_to_num(nan=float("inf"))
            worst = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
            lines.append(line + f"; first at {list(bad[0].tolist())}, largest at {list(worst)}")
            if public:
                row = worst[:-1]
                label = f"row {list(row)}" if row else "values"
                lines.append(f"  expected {label}: {_values(expected[row] if row else expected)}")
                lines.append(f"  got      {label}: {_values(got[row] if row else got)}")
        lines += ["  likely: " + h for h in _hints(got, expected, likely)]
        return lines
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if isinstance(got, torch.Tensor) and got.dim() == 0:
            got = got.item()
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return [f"{what}: expected a number, got {_kind(got)}"]
        rtol, atol = _tolerance(step, None)
        if abs(got - expected) <= atol + rtol * abs(expected) or (math.isnan(got) and math.isnan(expected)):
            return []
        return [f"{what}: expected {expected:.6g}, got {got:.6g}" if public else f"{what}: the number differs from the expected one"]
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return [f"{what}: expected {_kind(expected)}, got {_kind(got)}"]
        problems = []
        for i, (g, e) in enumerate(zip(got, expected)):
            problems += compare(g, e, step, public, f"{what}[{i}]")
        return problems
    if expected is None:
        return [] if got is None else [f"{what}: expected None, got {_kind(got)}"]
    return [] if got == expected else [f"{what}: expected {expected!r}, got {got!r}"]


# -- running the student's code -------------------------------------------------------------------
def _fail(step, count, case, lines):
    raise CheckFailed("\n".join([f"{step} [{count}], case {case!r}:", *("  " + line for line in lines)]))


def _run(step, count, case, phase, call):
    """``call()``, with the student's exception turned into a failed check that says where it came from."""
    try:
        return call()
    except NotImplementedError:
        _fail(step, count, case, ["not attempted yet: your code still raises NotImplementedError (the stub)"])
    except Exception as exc:  # noqa: BLE001 - any error in the student's code fails this case
        _fail(step, count, case, [f"your code raised {type(exc).__name__} during {phase}: {str(exc)[:400]}"])


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


def _gradient_problems(output, upstream, grads, step, public):
    """``grads``: (what, the tensor whose .grad is checked, the expected gradient) for each input."""
    if not isinstance(output, torch.Tensor):
        return ["no gradient could flow: your output is not a tensor"]
    if not output.requires_grad:
        return ["the gradient was cut: your output has no autograd graph (a .detach(), .item(), .numpy(), "
                "torch.tensor(...) re-wrap or torch.no_grad() on the way?)"]
    if tuple(output.shape) != tuple(upstream.shape):
        return ["gradients were not checked: your output has the wrong shape"]
    (output * upstream.to(output.dtype)).sum().backward()  # = output.backward(upstream), minus a 1 s import
    problems = []
    for what, tensor, expected in grads:
        if tensor is None:
            problems.append(f"your module has no parameter {what}")
        elif tensor.grad is None and expected is not None:
            problems.append(f"no gradient reaches {what}: it is unused, or the graph from it is cut (.detach()?)")
        elif expected is not None:
            problems += compare(tensor.grad, expected, step, public, f"gradient w.r.t. {what}")
    return problems


def _mutated(args, snapshots, names):
    return [names[i] for i, before in snapshots.items()
            if args[i].shape != before.shape or not torch.equal(args[i].detach(), before)]


def check_function(fn, step, count, *, case, args, names=None, kwargs=None, seed=None, public=True,
                   expected=None, parameters=None, modules_after=None, grad=(), upstream=None,
                   expected_grads=None, likely=None):
    """Call ``fn(*args, **kwargs)`` (after ``torch.manual_seed(seed)``) and compare with ``expected``.

    ``parameters``: which outputs must be ``nn.Parameter``; ``modules_after``: {argument index: the parameters
    that module argument must hold after the call}; ``grad``: the arguments whose gradient is checked, for
    the fixed ``upstream`` gradient of the output.
    """
    args = _fresh(list(args))
    names = names or [f"argument {i + 1}" for i in range(len(args))]
    for i in grad:
        args[i].requires_grad_(True)
    snapshots = {i: a.detach().clone() for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    _seed(seed)
    output = _run(step, count, case, "the call", lambda: fn(*args, **(kwargs or {})))
    lines = compare(output, expected, step, public, "output", likely)
    for i, must in enumerate(parameters or []):
        got = output[i] if isinstance(output, (tuple, list)) and i < len(output) else None
        if must and not isinstance(got, torch.nn.Parameter):
            lines.append(f"output[{i}] should be an nn.Parameter (so that training can update it)")
    for i, params in (modules_after or {}).items():
        mine = dict(args[i].named_parameters())
        for name, value in params:
            lines += compare(mine.get(name), value, step, public, f"{names[i]}.{name} after the call")
    changed = _mutated(args, snapshots, names)
    if changed:
        lines.append(f"your code modified its input in place ({', '.join(changed)}): use out-of-place operations")
    if upstream is not None and not lines:
        lines += _gradient_problems(output, upstream, [(names[i], args[i], e) for i, e in (expected_grads or {}).items()],
                                    step, public)
    if lines:
        _fail(step, count, case, lines)


def _build(cls, step, count, case, init, init_kwargs, seed):
    _seed(seed)
    module = _run(step, count, case, "__init__", lambda: cls(*init, **(init_kwargs or {})))
    if not isinstance(module, torch.nn.Module):
        _fail(step, count, case, [f"{cls.__name__}(...) did not create an nn.Module"])
    return module


def check_parameters(cls, step, count, *, case, init, seed, expected, init_kwargs=None, buffers=(),
                     total=None, public=True):
    """The parameters ``cls(*init)`` draws after ``torch.manual_seed(seed)``: names, order, shapes, values.

    ``expected``: (name, tensor) pairs, or (name, shape) when only shapes are compared.
    """
    module = _build(cls, step, count, case, init, init_kwargs, seed)
    mine = list(module.named_parameters())
    want, have = [n for n, _ in expected], [n for n, _ in mine]
    if want != have:
        lines = [f"expected parameters {want} (in this order), got {have}"]
        if sorted(want) == sorted(have):
            lines.append("likely: the parameters are created in a different order, so the seeded draws land in the wrong ones")
        _fail(step, count, case, lines)
    lines = []
    for (name, value), (_, p) in zip(expected, mine):
        if isinstance(value, list):
            if list(p.shape) != value:
                lines.append(f"parameter {name}: expected shape {value}, got {_shape(p)}")
        else:
            lines += compare(p.detach(), value, step, public, f"parameter {name}")
    if lines and not all(isinstance(v, list) for _, v in expected):
        lines.append("likely: other random draws (torch.rand vs torch.randn, nn.Linear vs nn.Parameter, or another order)")
    mine_buffers = {n: list(b.shape) for n, b in module.named_buffers()}
    for name, shape in buffers:
        if name not in mine_buffers:
            lines.append(f"no registered buffer named {name!r} (use self.register_buffer({name!r}, ...))")
        elif mine_buffers[name] != list(shape):
            lines.append(f"buffer {name!r}: expected shape {list(shape)}, got {mine_buffers[name]}")
    if total is not None and sum(p.numel() for _, p in mine) != total:
        lines.append(f"expected {total:,} parameters in all, got {sum(p.numel() for _, p in mine):,}")
    if lines:
        _fail(step, count, case, lines)


def check_module(cls, step, count, *, case, init, x, seed, expected, init_kwargs=None, weights=None,
                 train=False, forward_seed=None, public=True, upstream=None, expected_grads=None,
                 expected_param_grads=None, likely=None):
    """Build ``cls(*init)``, load ``weights`` (the reference's), run ``forward(x)`` and compare.

    With ``upstream``, also backpropagate it and compare the gradients w.r.t. x and every parameter.
    """
    module = _build(cls, step, count, case, init, init_kwargs, seed)
    own = dict(module.named_parameters())
    lines = []
    for name, value in weights or []:
        if name not in own:
            lines.append(f"your module has no parameter named {name}")
        elif tuple(own[name].shape) != tuple(value.shape):
            lines.append(f"parameter {name} has shape {_shape(own[name])}, expected {_shape(value)}")
    if lines:
        _fail(step, count, case, lines)
    with torch.no_grad():
        for name, value in weights or []:
            own[name].copy_(value)
    module.train(train)
    x = _fresh(x)
    if upstream is not None:
        x.requires_grad_(True)
    before = x.detach().clone()
    _seed(forward_seed)
    output = _run(step, count, case, "forward", lambda: module(x))
    lines = compare(output, expected, step, public, "output", likely)
    if not torch.equal(x.detach(), before):
        lines.append("your forward modified its input x in place: use out-of-place operations")
    if upstream is not None and not lines:
        grads = [("the input x", x, (expected_grads or {}).get("x"))]
        grads += [(f"parameter {n}", own.get(n), e) for n, e in (expected_param_grads or {}).items()]
        lines += _gradient_problems(output, upstream, grads, step, public)
    if lines:
        _fail(step, count, case, lines)


def check_raises(cls, step, count, *, case, init, exception, init_kwargs=None):
    """``cls(*init)`` must raise the exception named ``exception``."""
    try:
        cls(*init, **(init_kwargs or {}))
    except NotImplementedError:
        _fail(step, count, case, ["not attempted yet: your code still raises NotImplementedError (the stub)"])
    except Exception as exc:  # noqa: BLE001
        if type(exc).__name__ != exception:
            _fail(step, count, case, [f"expected {exception}, got {type(exc).__name__}: {str(exc)[:300]}"])
        return
    _fail(step, count, case, [f"expected {exception} for these arguments, but nothing was raised"])


def check_dropout(fn, step, count, *, case, x, p, seed, needs_graph=False):
    """Dropout by its properties: each entry 0 or x / (1 - p), about 1 - p of them kept, graph kept."""
    args = [x.detach().clone().requires_grad_(needs_graph), p]
    before = args[0].detach().clone()
    _seed(seed)
    out = _run(step, count, case, "the call", lambda: fn(*args))
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(x.shape):
        _fail(step, count, case, [f"expected a tensor of shape {_shape(x)}, got {_kind(out)}"])
    o, xd = out.detach().double(), x.double()
    zero = o.abs() <= 1e-12
    scaled = (o - xd / (1 - p)).abs() <= 1e-5 * (1 + xd.abs())
    lines = []
    if not bool((zero | scaled).all()):
        if bool(((o - xd).abs() <= 1e-6).all()) and p > 0:
            lines.append("your output equals the input: dropout was not applied (eval mode? a module created with p=0?)")
        else:
            lines.append(f"every entry must be 0 or input / (1 - p) = input * {1 / (1 - p):.4g}"
                         " (kept entries must be rescaled by 1/(1-p))")
    keep = 1 - zero.double().mean().item()
    if abs(keep - (1 - p)) > 6 * (p * (1 - p) / x.numel()) ** 0.5 + 1e-9:
        lines.append(f"you kept {keep:.3f} of the entries; dropout with p={p} keeps about {1 - p:.3f}"
                     " (did you pass 1-p where p was expected?)")
    if needs_graph and not out.requires_grad:
        lines.append("the gradient was cut: the output of dropout must stay in the autograd graph")
    if not torch.equal(args[0].detach(), before):
        lines.append("your code modified its input in place: use the out-of-place dropout")
    if lines:
        _fail(step, count, case, lines)
