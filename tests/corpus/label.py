"""An independent label for a corpus submission: which steps differ from ``solutions/``, found by running both.

A differential checker, on purpose apart from the kit: none of its judges, suites, cases, tolerances or
workers. Each step of the submission is run beside the same step of ``solutions/`` on this file's own inputs
(negative, large and tied scores, float64, T = 1, a batch of two; modules built from one seed, called twice
on one instance with other lengths, in training then eval mode, with seeded dropout), and compared: shape,
dtype, values, gradients, parameters, raising where the solution raises (sizes it refuses too). While a step
runs, the submission's *earlier* steps are the solution's (stand-ins, in process: this is a test tool), so a
bug is labelled on its own step only.

``python tests/corpus/label.py NAME...`` prints each submission's label: ``full``, or the steps that differ.
"""
from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = ROOT / "tests" / "corpus" / "submissions"
MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]
RTOL, ATOL = 1e-4, 1e-5
_count = itertools.count()


def _seed(value: int) -> None:
    """``torch.manual_seed`` for the CPU generator, the only one a CPU build draws from: the same draws, without
    the lazy seeding of other devices that formats a stack trace on every call (half of a label's time)."""
    torch.default_generator.manual_seed(value)


def load(folder: Path) -> dict:
    """The folder's modules, imported as a package of their own (a fresh copy each time)."""
    name = f"_labelled_{next(_count)}"
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return {m: importlib.import_module(f"{name}.{m}") for m in MODULES}


def steps_in_order() -> list[str]:
    import yaml  # noqa: PLC0415

    return list(yaml.safe_load((ROOT / "course.yml").read_text())["steps"])


def _substitute(modules: dict, reference: dict, steps: list[str]) -> None:
    """Every name in the submission's modules bound to one of ``steps`` now names the solution's."""
    for step in steps:
        module, name = step.split(".", 1)
        original, correct = getattr(modules[module], name, None), getattr(reference[module], name)
        if original is None:
            continue
        for mod in modules.values():
            for key, value in list(vars(mod).items()):
                if value is original:
                    setattr(mod, key, correct)


# ---- inputs -------------------------------------------------------------------------------------------

def _tensors(*shape, seed=0):
    """A few versions of one input: mixed signs, large (softmax overflow), ties, float64."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(*shape, generator=g)
    return [base, base * 60, torch.zeros(*shape), base.double(), base.abs() + 0.1]


def _weights(T, seed=0, batch=()):
    g = torch.Generator().manual_seed(seed)
    return [torch.softmax(torch.randn(*batch, T, T, generator=g), dim=-1),
            torch.softmax(torch.randn(*batch, T, T, generator=g).double(), dim=-1)]


def _function_calls(step: str):
    """(args, which args get a gradient) for a function step."""
    short = step.split(".", 1)[1]
    calls = []
    for T, d in ((6, 3), (1, 3), (4, 5)):
        X = _tensors(T, d)
        S = _tensors(T)
        SS = _tensors(T, T)
        if short == "attention_scores":
            calls += [((x, x[0]), (0, 1)) for x in X]
        elif short in ("normalize_sum", "softmax_naive"):
            calls += [((s,), (0,)) for s in S if not (short == "softmax_naive" and s.abs().max() > 20)]
            if short == "normalize_sum":
                calls += [((s,), (0,)) for s in S if s.abs().sum() > 0]
        elif short == "context_vector" and step.startswith("simple"):
            calls += [((x, torch.softmax(x[:, 0], 0)), (0, 1)) for x in X]
        elif short == "all_attention_scores":
            calls += [((x,), (0,)) for x in X]
        elif short in ("all_attention_weights", "mask_and_renormalize"):
            calls += [((s,), (0,)) for s in SS] if short == "all_attention_weights" else \
                     [((w,), (0,)) for w in _weights(T) + _weights(T, batch=(2,))]
        elif short == "all_context_vectors":
            calls += [((x, w.to(x.dtype)), (0, 1)) for x, w in zip(X, _weights(T) * 3)]
        elif short == "project":
            calls += [((x, torch.randn(d, 2, dtype=x.dtype)), (0, 1)) for x in X]
            calls += [((torch.randn(2, T, d), torch.randn(d, 2)), (0, 1))]
        elif short == "attention_scores_for_query":
            calls += [((x[0], x), (0, 1)) for x in X]
        elif short in ("scaled_attention_weights", "causal_attention_weights"):
            calls += [((s, dk), (0,)) for s in SS for dk in (2, 16)]
            calls += [((torch.randn(2, T, T), 4), (0,))]
        elif short == "context_vector":
            calls += [((w[0].to(x.dtype), x), (0, 1)) for x, w in zip(X, _weights(T) * 3)]
        elif short == "simple_causal_mask":
            calls += [((T,), ())]
        elif short == "apply_dropout":
            calls += [((w, p), (0,)) for w in _weights(T) for p in (0.0, 0.5)]
    if short == "init_qkv":
        calls = [((3, 2), ()), ((4, 4), ())]
    if short == "dot_product_variance":
        calls = [((dim, 200, "gen"), ()) for dim in (4, 64)]
    return calls


def _module_probes(short: str):
    """(constructor args, input shape) for a module step; its forward gets inputs of other lengths too."""
    if short in ("SelfAttention_v1", "SelfAttention_v2"):
        extra = [((3, 2, True), (6, 3))] if short == "SelfAttention_v2" else []
        return [((3, 2), (6, 3)), ((4, 4), (1, 4))] + extra
    if short == "CausalAttention":
        return [((3, 2, 6, 0.0), (2, 6, 3)), ((3, 4, 8, 0.5), (2, 5, 3)), ((3, 2, 6, 0.0, True), (1, 1, 3))]
    if short in ("MultiHeadAttentionWrapper", "MultiHeadAttention"):
        return [((3, 4, 6, 0.0, 2), (2, 6, 3)), ((4, 4, 8, 0.5, 2), (2, 5, 4)), ((3, 2, 6, 0.0, 1), (1, 1, 3)),
                ((3, 4, 6, 0.0, 2, True), (1, 2, 3))]
    return []


def _invalid_inits(short: str):
    """Constructor arguments a module step must refuse (raise for), as the solution does."""
    if short == "MultiHeadAttention":
        return [(3, 5, 6, 0.0, 2), (8, 6, 4, 0.0, 4)]
    return []


# ---- running and comparing ------------------------------------------------------------------------------

class Raised:
    def __init__(self, exc):
        self.kind = type(exc).__name__


def _close(a, b) -> bool:
    if isinstance(a, Raised) or isinstance(b, Raised):
        return isinstance(a, Raised) and isinstance(b, Raised)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (a.shape == b.shape and a.dtype == b.dtype
                and torch.allclose(a.detach(), b.detach(), rtol=RTOL, atol=ATOL, equal_nan=True))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= ATOL + RTOL * abs(b)
    return a == b


def _attempt(function):
    try:
        return function()
    except Exception as exc:  # noqa: BLE001 - a step raising is a result to compare
        return Raised(exc)


def _call(function, args, grads):
    def run():
        args_ = [torch.Generator().manual_seed(5) if a == "gen" else (a.clone().requires_grad_(i in grads)
                 if isinstance(a, torch.Tensor) and a.is_floating_point() else a) for i, a in enumerate(args)]
        _seed(11)
        out = function(*args_)
        facts = [type(out).__name__]
        if isinstance(out, tuple):
            facts = [(type(o).__name__, getattr(o, "requires_grad", None)) for o in out]
        result = [out, facts, [a.detach() for a in args_ if isinstance(a, torch.Tensor)]]
        if isinstance(out, torch.Tensor) and out.requires_grad:
            (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
            result.append([args_[i].grad for i in grads])
        return result
    return _attempt(run)


def _module_run(cls, init, shape):
    """Built from one seed, called on one instance: training (T), eval (shorter), training (T again)."""
    def run():
        _seed(123)
        module = cls(*init)
        params = [(n, p.detach().clone()) for n, p in module.named_parameters()]
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(3)).requires_grad_(True)
        shorter = x.detach()[..., : max(1, x.shape[-2] - 2), :]
        outs = []
        for train, inp in ((True, x), (False, shorter), (True, x)):
            module.train(train)
            _seed(7)
            outs.append(module(inp))
        outs[0].sum().backward()
        return [params, outs, x.grad, [(n, p.grad) for n, p in module.named_parameters()]]
    return _attempt(run)


def _transfer(modules):
    def run():
        _seed(1)
        v2 = modules["trainable_attention"].SelfAttention_v2(3, 2)
        v1 = modules["trainable_attention"].SelfAttention_v1(3, 2)
        return run_transfer(v2, v1)

    def run_transfer(v2, v1):
        modules["trainable_attention"].transfer_weights(v2, v1)
        x = torch.rand(5, 3)
        return [p.detach().clone() for p in v1.parameters()] + [v1(x)]
    return _attempt(run)


def _gpt2(function):
    def run():
        _seed(0)
        module = function()
        shapes = [(n, tuple(p.shape)) for n, p in module.named_parameters()]
        x = torch.randn(1, 4, 768, generator=torch.Generator().manual_seed(2))
        outs = []
        for train in (True, False):
            module.train(train)
            _seed(9)
            outs.append(module(x))
        return [shapes, outs]
    return _attempt(run)


def step_differs(folder: Path, step: str, order: list[str], standins: bool = True) -> bool:
    """Whether ``step`` of the submission in ``folder`` differs from the solution's, earlier steps standing in
    (``standins`` False: the submission's own, as a control)."""
    mine, reference = load(folder), load(ROOT / "solutions")
    module, short = step.split(".", 1)
    own = getattr(mine[module], short, None)
    if own is None:
        return True
    if standins:
        _substitute(mine, reference, order[: order.index(step)])
    return compare(mine, reference, step, own)


def compare(mine: dict, reference: dict, step: str, own) -> bool:
    """Whether ``own`` (the submission's ``step``, its earlier steps already standing in as the caller wants them in
    ``mine``, module -> namespace) differs from the solution's (``reference``, module -> module)."""
    module, short = step.split(".", 1)
    correct = getattr(reference[module], short)
    if short == "transfer_weights":
        return not _close(_transfer(mine), _transfer(reference))
    if short == "gpt2_small_attention":
        return not _close(_gpt2(own), _gpt2(correct))
    probes = _module_probes(short)
    if any(isinstance(_attempt(lambda: own(*init)), Raised) != isinstance(_attempt(lambda: correct(*init)), Raised)
           for init in _invalid_inits(short)):  # refusing what the solution refuses, and nothing else
        return True
    if probes:
        return any(not _close(_module_run(own, init, shape), _module_run(correct, init, shape)) for init, shape in probes)
    return any(not _close(_call(own, args, grads), _call(correct, args, grads)) for args, grads in _function_calls(step))


def label(folder: Path, standins: bool = True) -> dict:
    """``{"expect": "full"}``, or ``{"expect": "lose", "steps": [...]}``: the steps that differ, in unit order."""
    order = steps_in_order()
    torch.set_num_threads(1)
    differ = [step for step in order if step_differs(Path(folder), step, order, standins)]
    return {"expect": "lose", "steps": differ} if differ else {"expect": "full"}


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(name, label(SUBMISSIONS / name))
