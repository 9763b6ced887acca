"""Execute one request from the trusted side against the student's code.

A request names a target (a step id such as ``causal_attention.CausalAttention``) and says how to call it. The
answer carries plain tensors (the output, parameters, gradients for the upstream gradient the request chose) and
a few facts for the student's feedback (the output's class, whether it has a graph). This is the student's
process: everything in the answer is a claim. The trusted side judges values and gradients by comparing them,
reads in-place changes from the argument buffer it owns (``argument_buffer.py``), and scores nothing else the
worker says (docs/isolation.md, "What a worker says is a claim").
"""
from __future__ import annotations

import types
from pathlib import Path

import torch

from . import argument_buffer, warnings_seen
from . import standins as standins_mod
from .errors import error, failed
from .submission import describe_exception
from .unregistered import unregistered


def seed(value: int) -> None:
    """``torch.manual_seed`` for the CPU generator, which is all a CPU build draws from.

    ``torch.manual_seed`` also queues lazy seeding of CUDA, XPU and MTIA, formatting a stack trace
    each time (over 1 ms a call); the draws are the same.
    """
    torch.default_generator.manual_seed(int(value))


#: with ``param_stride``, parameters of more values than this are sampled; smaller ones are sent whole
SAMPLE_FROM = 4096


class MissingStep(LookupError):
    """The submission has no object by the step's name: said as ``{"missing": step}``, in the trusted side's words."""

    def __init__(self, target: str):
        super().__init__(target)
        self.target = target


class Workspace:
    """The student's imported modules, with stand-ins substituted, for one step."""

    def __init__(self, folder: Path, modules: dict[str, types.ModuleType], standins: dict[str, object]):
        self.folder = folder
        self.modules = modules
        self.standins = standins

    def add_standins(self, kinds: dict[str, str], call) -> None:
        """Build stand-in proxies (step -> "class" or "function") and substitute them in the student's modules."""
        objects = standins_mod.build(kinds, call)
        standins_mod.substitute(self.modules, objects)
        self.standins.update(objects)

    def resolve(self, target: str, standin: bool = False):
        if standin and target in self.standins:
            return self.standins[target]
        # No stand-in (a student's own check has no reference code): use the student's version.
        module_name, name = target.split(".", 1)
        module = self.modules.get(module_name)
        if module is None:
            raise MissingStep(target)
        try:
            return getattr(module, name)
        except AttributeError:
            raise MissingStep(target) from None


def _materialize(value, ws: Workspace, built_modules: list, buffer: argument_buffer.Buffer | None = None):
    if isinstance(value, torch.Tensor):
        # A fresh leaf every run: gradients must not accumulate into the request's own tensors.
        return value.detach().clone()
    if isinstance(value, dict):
        if "$shared" in value and buffer is not None:  # a view of the trusted side's buffer: a fresh leaf too
            return buffer.tensor(value["$shared"])
        if "$gen" in value:
            return torch.Generator().manual_seed(int(value["$gen"]))
        if "$dtype" in value:
            return getattr(torch, value["$dtype"])
        if "$module" in value:
            spec = value["$module"]
            cls = ws.resolve(spec["target"], standin=spec.get("standin", False))
            if spec.get("seed") is not None:
                seed(spec["seed"])
            module = cls(*spec.get("init_args", []), **spec.get("init_kwargs", {}))
            built_modules.append(module)
            return module
        return {k: _materialize(v, ws, built_modules) for k, v in value.items()}
    if isinstance(value, list):
        return [_materialize(v, ws, built_modules, buffer) for v in value]
    if isinstance(value, tuple):
        return tuple(_materialize(v, ws, built_modules) for v in value)
    return value


def _plain(value, depth: int = 0):
    """Make a student's return value safe to send: tensors, numbers, tuples of them; else a type tag."""
    if depth > 4:
        return {"$unsupported": "nested too deeply"}
    if type(value) is torch.Tensor:
        return value
    if type(value) is torch.nn.Parameter:
        return value.data
    if isinstance(value, torch.Tensor):
        # A tensor subclass can override every operation the grader would use on it: refused.
        return {"$unsupported": f"tensor subclass {type(value).__name__}"}
    if value is None or isinstance(value, (bool, int, float, str)) and type(value) in (bool, int, float, str):
        return value
    if type(value) in (tuple, list):
        plain = [_plain(v, depth + 1) for v in value]
        return tuple(plain) if type(value) is tuple else plain
    return {"$unsupported": type(value).__name__ if isinstance(type(value).__name__, str) else "object"}


def _fact(value) -> dict | None:
    """What the student's feedback says of one output: its class, whether it is an ``nn.Parameter``, needs a
    gradient, and its ``grad_fn``. Feedback only: no score rests on it."""
    if not isinstance(value, torch.Tensor):
        return None
    fn = value.grad_fn
    return {"class": type(value).__name__, "parameter": isinstance(value, torch.nn.Parameter),
            "requires_grad": bool(value.requires_grad), "grad_fn": type(fn).__name__ if fn is not None else None}


def _grad(tensor):
    """``tensor.grad`` where torch keeps one (a leaf, or a tensor that retains its gradient), else None."""
    return tensor.grad if tensor.is_leaf or tensor.retains_grad else None


def _params(module: torch.nn.Module, request: dict) -> dict:
    """What a module's construction answers: its parameters (sampled, or their shapes only, at GPT-2 sizes), and its
    buffers' shapes."""
    answer: dict = {}
    if request.get("shapes_only"):  # GPT-2 sizes: 2.4 M values that nobody compares
        answer["params"] = [(n, list(p.shape)) for n, p in module.named_parameters()]
    elif request.get("param_stride"):  # GPT-2 sizes: every k-th value of the large ones, with the shapes
        stride = int(request["param_stride"])
        answer["params"] = [(n,
                             p.detach().reshape(-1)[::stride].clone() if p.numel() > SAMPLE_FROM
                             else p.detach().clone())
                            for n, p in module.named_parameters()]
        answer["param_shapes"] = [(n, list(p.shape)) for n, p in module.named_parameters()]
    elif request.get("want_params", True):
        answer["params"] = [(n, p.detach().clone()) for n, p in module.named_parameters()]
    answer["buffers"] = [(n, list(b.shape)) for n, b in module.named_buffers()]
    return answer


def _load(module: torch.nn.Module, load: dict | None) -> None:
    """The reference's weights, copied into the student's module by name."""
    if not load:
        return
    own = dict(module.named_parameters())
    missing = [n for n in load if n not in own]
    if missing:
        raise LookupError(f"your module has no parameter named {', '.join(missing)}")
    with torch.no_grad():
        for name, tensor in load.items():
            if tuple(own[name].shape) != tuple(tensor.shape):
                raise ValueError(f"parameter {name} has shape {list(own[name].shape)}, expected {list(tensor.shape)}")
            own[name].copy_(tensor)


def run(request: dict, ws: Workspace, buffer: argument_buffer.Buffer | None = None) -> dict:
    """Run one request; never raises (errors are part of the answer). The warnings raised about the student's files
    meanwhile are the answer's ``warnings`` (``warnings_seen.py``), never printed.

    ``buffer``: the trusted side's buffer holding the call's top-level tensor arguments (``$shared`` markers), whose
    in-place changes the trusted side reads itself. Without one (the reference in the trusted process, a worker
    spawned where descriptors cannot be handed over), the answer carries ``args_after``: copies of the arguments as
    the call left them.
    """
    with warnings_seen.collecting(ws.folder) as warned:
        answer = _run(request, ws, buffer)
    if warned:
        answer["warnings"] = warned
    return answer


def _run(request: dict, ws: Workspace, buffer: argument_buffer.Buffer | None = None) -> dict:
    phase, module = "setup", None
    try:
        built: list = []
        target = ws.resolve(request["target"], standin=request.get("standin", False))
        if request.get("seed") is not None:
            seed(request["seed"])
        answer: dict = {"ok": True}
        if request["kind"] == "module":
            phase = "__init__"
            module = target(*_materialize(request.get("init_args", []), ws, built), **request.get("init_kwargs", {}))
            if not isinstance(module, torch.nn.Module):
                raise TypeError(f"{request['target']}(...) did not create an nn.Module")
            answer.update(_params(module, request))
            answer.update(_unregistered(module))
            if request.get("construct_only"):
                return answer
            phase = "loading the reference weights"
            _load(module, _materialize(request.get("load_params"), ws, built))
            phase = "forward"
            # Earlier calls on the same instance (other lengths, the other mode): state a module keeps
            # between calls (cached keys, a mask buffer overwritten by its slice) shows on the judged call.
            for earlier in request.get("calls_before", []):
                module.train(bool(earlier.get("train", False)))
                if earlier.get("seed") is not None:
                    seed(earlier["seed"])
                module(*_materialize(earlier.get("args", []), ws, built))
            module.train(bool(request.get("train", False)))
            callee, params = module, list(module.named_parameters())
            args, kwargs = _materialize(request.get("forward_args", []), ws, built, buffer), {}
        else:
            phase = "call"
            callee, params = target, []
            args = _materialize(request.get("args", []), ws, built, buffer)
            kwargs = _materialize(request.get("kwargs", {}), ws, built)
        grad_args = [int(i) for i in request.get("grad_args", [])]
        for index in grad_args:
            args[index].requires_grad_(True)
        upstream = _materialize(request.get("upstream"), ws, built)
        if request.get("forward_seed") is not None:
            seed(request["forward_seed"])
        output = callee(*args, **kwargs)
        if buffer is None:  # in the trusted process, or no buffer to hand over: the arguments as the call left them
            answer["args_after"] = [a.detach().clone() if isinstance(a, torch.Tensor) else None for a in args]
        answer["output"] = _plain(output)
        outputs = output if type(output) in (tuple, list) else None
        facts = [_fact(o) for o in (outputs if outputs is not None else (output,))]
        answer["output_facts"] = facts if outputs is not None else facts[0]
        answer["modules_after"] = [[(n, p.detach().clone()) for n, p in m.named_parameters()] for m in built]
        if upstream is not None:
            phase = "backward"
            if not isinstance(output, torch.Tensor):
                answer["backward"] = "not a tensor"
            elif not output.requires_grad:
                answer["backward"] = "no graph"
            elif tuple(output.shape) != tuple(upstream.shape):
                answer["backward"] = "shape"
            else:
                # The same gradients as output.backward(upstream) (d sum(out * up) / d out = up, exactly),
                # without torch's import of its symbolic-shapes machinery on an explicit gradient (~1 s).
                (output * upstream.to(output.dtype)).sum().backward()
                answer["backward"] = "done"
                answer["input_grads"] = {str(i): _grad(args[i]) for i in grad_args}
                answer["param_grads"] = {n: _grad(p) for n, p in params}
        return answer
    except MissingStep as exc:
        return failed(error("MissingStep", ""), phase, missing=exc.target)
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt and the student's own too
        return failed(describe_exception(exc, ws.folder), phase, not_attempted=isinstance(exc, NotImplementedError),
                      **(_unregistered(module) if isinstance(module, torch.nn.Module) else {}))


def _unregistered(module: torch.nn.Module) -> dict:
    """What the module's __init__ left where nn.Module does not look (``feedback/structure.py``), for the student's
    feedback only; nothing when there is none, or when looking fails."""
    try:
        found = unregistered(module)
    except BaseException:  # noqa: BLE001 - the student's module: a hostile attribute is no reason to fail the call
        return {}
    return {"unregistered": found} if found else {}


def prepare(folder: Path, modules: dict[str, types.ModuleType]) -> Workspace:
    return Workspace(folder, modules, {})
