"""Execute one request from the trusted side against the student's code.

A request names a target (a step id such as ``causal_attention.CausalAttention``) and says how to call
it. The answer carries plain tensors and facts (shapes, dtypes, whether the output still has a gradient
graph, which inputs were modified in place); all judging happens on the trusted side.
"""
from __future__ import annotations

import _signal
import gc
import signal
import sys
import types
from pathlib import Path

import torch

from . import seal as seal_mod
from . import standins as standins_mod
from .errors import error, failed
from .submission import describe_exception


# Bound before any student code runs, and only C-level callables: the facts a worker reports about its own
# objects (the output's type, whether it has a graph) are computed with these inside ``run``'s own frame,
# from locals bound at its entry, so rebinding names in this module (a frame walk to our globals) or in
# torch changes nothing. What can be judged on the trusted side is: inputs modified in place are found
# there, from the arguments sent back after the call.
_C_TENSOR = torch._C.TensorBase
_NO_DISPATCH = torch._C._DisableTorchDispatch  # a pybind class, which student code can change: its methods bound now
_BOUND = (type, torch.nn.Parameter, _C_TENSOR.__dict__["requires_grad"].__get__,
          _C_TENSOR.__dict__["grad_fn"].__get__, _C_TENSOR.__dict__["grad"].__get__, _C_TENSOR.detach,
          _C_TENSOR.clone, issubclass, _C_TENSOR, tuple, list, str, bool, int, gc.disable, gc.enable, gc.isenabled,
          type.__dict__["__name__"].__get__, str.__str__)
#: torch's Python hooks off, and on again: no ``__torch_function__`` (``DisableTorchFunction``, an immutable C type) and
#: no ``__torch_dispatch__`` nor mode (``_DisableTorchDispatch``, made and left through methods bound here)
#: every signal a Python handler can be given
_SIGNALS = tuple(int(s) for s in signal.valid_signals() if s not in (getattr(signal, "SIGKILL", -1),
                                                                    getattr(signal, "SIGSTOP", -1)))


def handlers(_get=_signal.getsignal, _numbers=_SIGNALS, _tuple=tuple, _sys=vars(sys)) -> tuple:
    """The Python handler of each signal now, then ``sys.unraisablehook`` (the worker's own, taken before student code
    runs: ``child.serve``)."""
    return (*_tuple(_get(number) for number in _numbers), _sys["unraisablehook"])


def _quiet(own: tuple, keep: list, _get=_signal.getsignal, _set=_signal.signal, _ignore=_signal.SIG_IGN,
           _numbers=_SIGNALS, _append=list.append, _sys=vars(sys), _silent=type) -> None:
    """Ignore every signal whose Python handler is not the worker's own (``own``, from ``handlers()``). A handler of
    the student's runs between two bytecodes of whatever code runs when its signal comes, in the main thread (a
    fifth review's timer rewrote the answer from ``pack``), whichever thread takes the signal: blocking them in one
    thread is not enough once torch has threads. A handler that runs before this is part of the student's call.
    The handlers taken off are added to ``keep``, for the caller to let go of once the bytes are made: freed here, one
    would run its own ``__del__`` (a sixth review's).
    A signal that came just before its handler was taken off is said as "ignored due to race condition" through
    ``sys.unraisablehook``, which student code can set too: one that is not the worker's own gives way to ``type``
    (a C callable that says nothing), kept likewise.
    Where the worker's seccomp filter is installed (``seccomp.no_signal_handlers``), no such handler exists; elsewhere
    a handler of the student's that a signal runs during this loop could give one back to a signal already passed.
    """
    hook = _sys["unraisablehook"]  # sys's own dict: a module's __getattribute__ can be a student's (sys.__class__)
    if hook is not own[-1]:
        _append(keep, hook)
        _sys["unraisablehook"] = _silent
    i = 0
    for number in _numbers:
        if _get(number) is not own[i]:
            _append(keep, _set(number, _ignore))
        i += 1


_HOOKS = (torch._C.DisableTorchFunction, _NO_DISPATCH.__new__, _NO_DISPATCH.__init__, _NO_DISPATCH.__enter__,
          _NO_DISPATCH.__exit__, _NO_DISPATCH)


def seed(value: int) -> None:
    """``torch.manual_seed`` for the CPU generator, which is all a CPU build draws from.

    ``torch.manual_seed`` also queues lazy seeding of CUDA, XPU and MTIA, formatting a stack trace
    each time (over 1 ms a call); the draws are the same.
    """
    torch.default_generator.manual_seed(int(value))


#: with ``param_stride``, parameters of more values than this are sampled; smaller ones are sent whole
SAMPLE_FROM = 4096


class MissingStep(LookupError):
    """The submission has no object by the step's name."""


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
            raise MissingStep(f"{module_name}.py could not be imported")
        try:
            return getattr(module, name)
        except AttributeError:
            raise MissingStep(f"{module_name}.py defines no {name} (check the spelling, and that it is defined at the top level of the module)") from None


def _materialize(value, ws: Workspace, built_modules: list):
    if isinstance(value, torch.Tensor):
        # A fresh leaf every run: gradients must not accumulate into the request's own tensors.
        return value.detach().clone()
    if isinstance(value, dict):
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
        return [_materialize(v, ws, built_modules) for v in value]
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
        return tuple(_plain(v, depth + 1) for v in value) if type(value) is tuple else [_plain(v, depth + 1) for v in value]
    return {"$unsupported": type(value).__name__ if isinstance(type(value).__name__, str) else "object"}


def _run(request: dict, ws: Workspace, seal, own_handlers, bound: tuple, hooks: tuple, helpers: tuple):
    """``run``'s request, with ``run``'s bound callables and helpers: its answer, sealed here (with ``seal``) while
    this frame still holds every object of the student's."""
    (type_, Parameter, requires_grad, grad_fn, grad, detach, clone, issubclass_, TensorBase,
     tuple_, list_, str_, bool_, int_, gc_off, _, _, name_of, as_str) = bound
    (plain, describe, materialize, report_failure, facts, frozen, sealed, modules_of, error_, BaseException_,
     NotImplementedError_, quiet) = helpers
    kept = []  # what the way out takes from the student's objects, let go of only once the bytes exist
    phase = "setup"
    try:
        built: list = []
        target = ws.resolve(request["target"], standin=request.get("standin", False))
        if request.get("seed") is not None:
            seed(request["seed"])
        answer: dict = {"ok": True}
        if request["kind"] == "module":
            phase = "__init__"
            init_args = materialize(request.get("init_args", []), ws, built)
            module = target(*init_args, **request.get("init_kwargs", {}))
            if not isinstance(module, torch.nn.Module):
                raise TypeError(f"{request['target']}(...) did not create an nn.Module")
            if request.get("shapes_only"):  # GPT-2 sizes: 2.4 M values that nobody compares
                answer["params"] = [(n, list(p.shape)) for n, p in module.named_parameters()]
            elif request.get("param_stride"):  # GPT-2 sizes: every k-th value of the large ones, with the shapes
                stride = int(request["param_stride"])
                answer["params"] = [(n, clone(detach(p).reshape(-1)[::stride] if p.numel() > SAMPLE_FROM else detach(p)))
                                    for n, p in module.named_parameters()]
                answer["param_shapes"] = [(n, list(p.shape)) for n, p in module.named_parameters()]
            elif request.get("want_params", True):
                answer["params"] = [(n, clone(detach(p))) for n, p in module.named_parameters()]
            answer["buffers"] = [(n, list(b.shape)) for n, b in module.named_buffers()]
            if request.get("construct_only"):
                if own_handlers is not None:
                    quiet(own_handlers, kept)
                gc_off()
                return answer if seal is None else sealed(answer, seal, bound, hooks, report_failure, error_)
            phase = "loading the reference weights"
            load = materialize(request.get("load_params"), ws, built)
            if load:
                own = dict(module.named_parameters())
                missing = [n for n in load if n not in own]
                if missing:
                    raise LookupError(f"your module has no parameter named {', '.join(missing)}")
                with torch.no_grad():
                    for name, tensor in load.items():
                        if tuple(own[name].shape) != tuple(tensor.shape):
                            raise ValueError(f"parameter {name} has shape {list(own[name].shape)}, expected {list(tensor.shape)}")
                        own[name].copy_(tensor)
            phase = "forward"
            # Earlier calls on the same instance (other lengths, the other mode): state a module keeps
            # between calls (cached keys, a mask buffer overwritten by its slice) shows on the judged call.
            for earlier in request.get("calls_before", []):
                module.train(bool(earlier.get("train", False)))
                if earlier.get("seed") is not None:
                    seed(earlier["seed"])
                module(*materialize(earlier.get("args", []), ws, built))
            module.train(bool(request.get("train", False)))
            callee = module
            params = tuple_(dict(module.named_parameters()).items())
            args = materialize(request.get("forward_args", []), ws, built)
            kwargs = {}
            phase = "forward"
        else:
            params = ()
            callee = target
            args = materialize(request.get("args", []), ws, built)
            kwargs = materialize(request.get("kwargs", {}), ws, built)
            phase = "call"
        grad_args = tuple_(int_(i) for i in request.get("grad_args", []))
        for index in grad_args:
            args[index].requires_grad_(True)
        args = tuple_(args)  # what the student's code may not swap: the very tensors it was given
        upstream = materialize(request.get("upstream"), ws, built)
        if request.get("forward_seed") is not None:
            seed(request["forward_seed"])
        output = callee(*args, **kwargs)
        # The call has returned: its arguments, as they are now, read at once, as bytes nothing can change (the
        # student's code may still run below: _plain, named_parameters, the backward and its hooks). A signal handler
        # of the student's is ignored from here (``_quiet``).
        if own_handlers is not None:
            quiet(own_handlers, kept)
        gc_off()
        after = frozen(args, seal is not None, bound, hooks)
        sent = plain(output)
        modules_after = modules_of(built, bound)
        backward = None
        if upstream is not None:
            phase = "backward"
            if not issubclass_(type_(output), TensorBase):
                backward = "not a tensor"
            elif not requires_grad(output):
                backward = "no graph"
            elif tuple_(output.shape) != tuple_(upstream.shape):
                backward = "shape"
            else:
                # The same gradients as output.backward(upstream) (d sum(out * up) / d out = up, exactly),
                # without torch's import of its symbolic-shapes machinery on an explicit gradient (~1 s).
                (output * upstream.to(output.dtype)).sum().backward()
                backward = "done"
        # No student code runs from here on (nor a finalizer: the collector is off, and this frame holds the student's
        # objects until the answer is sealed)
        # From here to the bytes, no local is rebound either: an object let go of could run a __del__ of the student's.
        # Its signal handlers are ignored again: the student's code above may have set new ones.
        if own_handlers is not None:
            quiet(own_handlers, kept)
        gc_off()
        fresh = facts(answer, sent, output, after, args, grad_args, params, modules_after, backward, bound, hooks)
        return fresh if seal is None else sealed(fresh, seal, bound, hooks, report_failure, error_)
    except BaseException_ as exc:  # SystemExit, KeyboardInterrupt and custom BaseExceptions too
        description = describe(exc, ws.folder)  # the student's exception: its code may run here
        if own_handlers is not None:  # before the answer exists: a handler run from here on could rewrite it
            quiet(own_handlers, kept)
        gc_off()
        failure = report_failure(description, phase, not_attempted=issubclass_(type_(exc), NotImplementedError_))
        return failure if seal is None else sealed(failure, seal, bound, hooks, report_failure, error_)


def _frozen(args: tuple, sealing: bool, bound: tuple, hooks: tuple, _raw=seal_mod.raw,
            _BaseException=BaseException) -> tuple:
    """The call's arguments as they are right after it returned: for the worker (``sealing``), each tensor's bytes
    (``seal.raw``: read without a single operator of torch's dispatcher, where a Python kernel of the student's could
    sit), None for one that cannot be read so (the trusted side counts it as modified) or is no tensor; in process
    (the reference's own answers), copies."""
    (type_, _, _, _, _, detach, clone, issubclass_, TensorBase, tuple_, *_) = bound
    no_functions, new, init, enter, leave, NoDispatch = hooks
    out, keep = [], []  # keep: what ``raw`` made, let go of once every argument is read
    with no_functions():
        guard = new(NoDispatch)
        init(guard)
        enter(guard)
        try:
            for a in args:
                if not issubclass_(type_(a), TensorBase):
                    out.append(None)
                elif not sealing:
                    out.append(clone(detach(a)))
                else:
                    try:
                        out.append(_raw(a, keep))
                    except _BaseException:
                        out.append(None)
        finally:
            leave(guard, None, None, None)
    return tuple_(out)


def _modules_of(built: list, bound: tuple) -> list:
    """The parameters of the modules built as arguments (``$module``), as the call left them, read through the
    modules' own ``named_parameters`` (the student's objects: what they say, as an output does)."""
    (_, _, _, _, _, detach, clone, *_) = bound
    return [[(n, clone(detach(p))) for n, p in m.named_parameters()] for m in built]


#: the grad_fn said of an output that is a view and needs a gradient: a view has one exactly then
VIEW_GRAD_FN = "a view's backward"


def _grad(tensor, _grad=_C_TENSOR.__dict__["grad"].__get__, _is_leaf=_C_TENSOR.__dict__["is_leaf"].__get__,
          _retains=_C_TENSOR.__dict__["retains_grad"].__get__, _is_view=_C_TENSOR._is_view):
    """``tensor.grad``, read only where torch keeps one (a leaf, or a tensor that retains its gradient): elsewhere
    torch warns, through Python's ``warnings``, whose hooks student code can set (a seventh review's forged the
    answer from ``showwarning``). None there, as torch would say; None for a view too, whose ``is_leaf`` torch
    answers by rebuilding its ``grad_fn`` through the dispatcher (``_facts``)."""
    if _is_view(tensor):
        return None
    return _grad(tensor) if _is_leaf(tensor) or _retains(tensor) else None


def _facts(answer: dict, sent, output, after: tuple, args: tuple, grad_args: tuple, params: tuple,
           modules_after: list, backward, bound: tuple, hooks: tuple, _grad_of=_grad,
           _is_view=_C_TENSOR._is_view, _view_grad_fn=VIEW_GRAD_FN) -> dict:
    """A new answer, from what ``answer`` said before the call (the module's construction) and the facts of the
    student's call, read once its last code has run: the collector is off and torch's Python hooks too (no
    ``__torch_function__``, ``__torch_dispatch__`` or mode of the student's runs here), from the C-level callables
    ``bound`` at ``run``'s entry; types are told by ``type()`` (``isinstance`` would ask an object's ``__class__``).
    A function of its own: its locals are made after student code has run (a comprehension in ``_run`` would keep the
    callables it names in cells, which student code can reach and refill). Only the keys named here are kept: any
    other that student code put in ``answer`` while it ran is dropped."""
    (type_, Parameter, requires_grad, grad_fn, grad, detach, clone, issubclass_, TensorBase,
     tuple_, list_, str_, bool_, int_, _, _, _, name_of, as_str) = bound
    no_functions, new, init, enter, leave, NoDispatch = hooks
    fresh = {"ok": True, "output": sent}
    for key in ("params", "param_shapes", "buffers"):
        if key in answer:
            fresh[key] = answer[key]
    with no_functions():
        guard = new(NoDispatch)
        init(guard)
        enter(guard)
        try:
            outputs = output if type_(output) is tuple_ or type_(output) is list_ else None
            facts = []
            for value in (outputs if outputs is not None else (output,)):
                if issubclass_(type_(value), TensorBase):
                    needs = bool_(requires_grad(value))
                    if _is_view(value):  # its grad_fn: rebuilt through the dispatcher (a Python kernel's) once its
                        named = _view_grad_fn if needs else None  # base changed (an eighth review's): not read
                    else:
                        fn = grad_fn(value)
                        named = as_str(name_of(type_(fn))) if fn is not None else None
                    facts.append({"class": as_str(name_of(type_(value))), "parameter": type_(value) is Parameter,
                                  "requires_grad": needs, "grad_fn": named})
                else:
                    facts.append(None)
            fresh["output_facts"] = facts if outputs is not None else facts[0]
            fresh["args_after"] = list_(after)
            fresh["modules_after"] = modules_after
            if backward is not None:
                fresh["backward"] = backward
            if backward == "done":
                fresh["input_grads"] = {str_(i): _grad_of(args[i]) for i in grad_args}
                fresh["param_grads"] = {as_str(n): _grad_of(p) for n, p in params}
        finally:
            leave(guard, None, None, None)
    return fresh


def _sealed(answer: dict, seal, bound: tuple, hooks: tuple, failed_, error_, _BaseException=BaseException) -> tuple:
    """``(ok, the answer's bytes)``, made with torch's Python hooks off (the collector is off already); an answer
    that cannot be sent becomes the error saying why."""
    type_, str_, name_of = bound[0], bound[11], bound[17]
    no_functions, new, init, enter, leave, NoDispatch = hooks
    with no_functions():
        guard = new(NoDispatch)
        init(guard)
        enter(guard)
        try:
            try:
                return answer.get("ok") is True, seal(answer)
            except _BaseException as exc:  # something un-sendable slipped through
                return False, seal(failed_(error_(name_of(type_(exc)), str_(exc)), "returning the result"))
        finally:
            leave(guard, None, None, None)


def run(request: dict, ws: Workspace, seal=None, own_handlers: tuple | None = None, _bound=_BOUND, _hooks=_HOOKS,
        _run=_run, _helpers=(_plain, describe_exception, _materialize, failed, _facts, _frozen, _sealed, _modules_of,
                             error, BaseException, NotImplementedError, _quiet)):
    """Run one request; never raises (errors are part of the answer).

    Nothing is looked up once student code has run: what runs then comes from defaults, fixed when this module was
    imported (the worker's audit hook refuses a new ``__defaults__`` or ``__code__``), never from a module's globals
    or the builtins, which student code can rebind for one call and put back before the integrity check looks (the
    red team's ``forge_facts_on_the_way_out``). The call's arguments are read as bytes the moment it returns; the
    other facts once the last student code (backward hooks included) has run, with the collector and torch's Python
    hooks off (``_HOOKS``: no ``__torch_function__``, ``__torch_dispatch__`` or mode of the student's runs), by C-level
    callables (``_BOUND``) and no operator of torch's dispatcher, where a Python kernel of the student's could sit.

    With ``own_handlers`` (``handlers()``, taken before student code ran), a signal handler of the student's is ignored
    from the call's return until the bytes exist (``_quiet``).

    With ``seal`` (``seal.pack``), the answer is returned as ``(ok, its bytes)``, sealed in ``_run``'s frame, which still
    holds every object of the student's; no local there is rebound after the call, and what the way out makes is kept
    until the bytes exist (``seal.raw``): no finalizer (``__del__``, ``gc.callbacks``, a weakref's callback) runs
    between the last student code and the bytes, which nothing can change afterwards. The red team swapped
    ``args_after`` that way four times: a ``gc`` callback, a weakref's callback on an input, a ``__del__`` given to
    ``torch.Tensor``, and one planted in the answer dict of before the call.
    """
    gc_was_on, gc_on = _bound[16], _bound[15]
    collecting = gc_was_on()
    try:
        return _run(request, ws, seal, own_handlers, _bound, _hooks, _helpers)
    finally:
        if collecting:
            gc_on()


def prepare(folder: Path, modules: dict[str, types.ModuleType]) -> Workspace:
    return Workspace(folder, modules, {})
