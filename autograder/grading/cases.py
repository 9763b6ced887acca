"""``check``: the object a hidden test uses to grade one count of one step.

A test calls ``check.call(...)``, ``check.module(...)``, ``check.parameters(...)``, ``check.raises(...)``,
``check.dropout(...)`` or ``check.module_dropout(...)`` once per case. Each builds a request, runs it against the
reference (here, in the trusted process) and against the student (in a worker), judges the answers and raises
:class:`StepFailure` with teaching feedback on the first failing case. Cases marked ``public`` are the course documents'
own inputs: ``grade assign`` records them, with their expected answers, for
``grade check``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

import torch

from . import evidence, judge as judges
from autograder.feedback.tolerance import Tolerance, tolerance_for_output
from autograder.feedback.gradients import said_once
from autograder.feedback.warned import pending, unsaid
from autograder.outputs.verdict import FAILED, StepFailure, Verdict


#: parameters with more values than this in all are compared on a sample of every SAMPLE_STRIDE-th value
SAMPLE_ABOVE = 200_000
SAMPLE_STRIDE = 97


def _sampled(params) -> bool:
    """Millions of values: compare every SAMPLE_STRIDE-th one (prime, so the sample crosses rows and columns)."""
    return sum(t.numel() for _, t in params) > SAMPLE_ABOVE


@dataclass
class Tolerances:
    float32: Tolerance
    float64: Tolerance

    def for_answer(self, answer: dict) -> Tolerance:
        return tolerance_for_output(answer.get("output"), self.float32, self.float64)


def upstream_for(step: str, case: str, like: torch.Tensor) -> torch.Tensor:
    """A fixed upstream gradient for ``like``'s shape: the same for student and reference, every run."""
    seed = int.from_bytes(hashlib.sha256(f"{step}|{case}".encode()).digest()[:6], "big")
    g = torch.Generator().manual_seed(seed)
    return torch.randn(like.shape, generator=g, dtype=torch.float64).to(like.dtype)


class Check:
    def __init__(self, step: str, count: str, student: Callable[[str, dict], dict], reference,
                 tolerances: Tolerances, recorder: list | None = None, public_count: bool = True,
                 cache: dict | None = None, said: dict | None = None):
        self.step = step
        self.count = count
        self.student = student
        self.reference = reference
        self.tolerances = tolerances
        self.recorder = recorder
        self.public_count = public_count  # a case is public only within a public count
        self.cases_run = 0
        #: what the student is told besides the verdict (``Verdict.notes``), each once
        self.notes: list[str] = []
        # Reference answers are the same for every submission: a batch computes each once.
        self.cache = cache if cache is not None else {}
        #: what each failing case already said, in this submission's other counts (``gradients.said_once``)
        self.said = said if said is not None else {}

    # -- building blocks -------------------------------------------------------------------------
    def _evaluate(self, case: dict, expected: dict) -> dict:
        case["public"] = bool(case["public"] and self.public_count)
        got = self.student(self.step, case["request"])
        verdict = judges.judge(case, expected, got, self.tolerances.for_answer(expected), case["public"])
        self.cases_run += 1
        if self.recorder is not None and case["public"]:
            self.recorder.append({**case, "step": self.step, "count": self.count, "expected": expected})
        self.notes += [note for note in verdict.notes if note not in self.notes]
        warned = pending(self.said, self.step)  # the student's own warnings, once in the submission
        warned += unsaid(verdict.warnings, self.said)
        if not verdict.passed:
            shown = verdict.lines + self.notes if self.notes else verdict.lines
            lines = said_once(self.said, self.step, self.count, case["name"], shown)
            shortened = lines is not shown
            failure = StepFailure(self.step, self.count, case["name"], Verdict(verdict.status, [*lines, *warned]))
            warned.clear()  # shown where the step fails
            # the values block and grid were shown under the other count: no second picture of them either
            failure.evidence = None if shortened else evidence.collect(
                self.step, case, expected, got, self.tolerances.for_answer(expected), case["public"])
            raise failure
        return got

    def _cached(self, case: str, build):
        """``build()`` -> (case dict, expected answer), computed once per batch for this case."""
        key = (self.step, self.count, self.cases_run, case)
        if key not in self.cache:
            self.cache[key] = build()
        case_, expected = self.cache[key]
        return {**case_}, expected

    def _reference(self, request: dict) -> dict:
        answer = self.reference.run(request)
        if not answer.get("ok", False) and request.get("expect_error") is None:
            raise RuntimeError(f"the reference failed on {self.step}: {answer.get('error')}")
        return answer

    def fail(self, case: str, *lines: str) -> None:
        raise StepFailure(self.step, self.count, case, Verdict(FAILED, list(lines)))

    # -- functions -------------------------------------------------------------------------------
    def call(self, *args, case: str, public: bool = False, grad: bool = False, seed: int | None = None,
             kwargs: dict | None = None, arg_names: list[str] | None = None, fields: list[str] | None = None,
             mistakes: dict[str, Callable] | None = None, check_parameter_type: bool = False) -> dict:
        """Call the step's function on ``args`` and compare outputs (and gradients when ``grad``)."""
        return self._evaluate(*self._cached(case, lambda: self._build_call(
            list(args), case, public, grad, seed, kwargs, arg_names, fields, mistakes, check_parameter_type)))

    def _build_call(self, args, case, public, grad, seed, kwargs, arg_names, fields, mistakes, check_parameter_type):
        request = {"kind": "function", "target": self.step, "args": args, "kwargs": kwargs or {}, "seed": seed}
        if grad:
            request["grad_args"] = [i for i, a in enumerate(args)
                                    if isinstance(a, torch.Tensor) and a.dtype.is_floating_point]
        expected = self._reference(request)
        if grad and isinstance(expected.get("output"), torch.Tensor):
            request["upstream"] = upstream_for(self.step, case, expected["output"])
            expected = self._reference(request)
        wrong = {}
        for label, fn in (mistakes or {}).items():
            with torch.no_grad():
                wrong[label] = fn(*[a.detach() if isinstance(a, torch.Tensor) else a for a in args], **(kwargs or {}))
        case_ = {"name": case, "public": public, "request": request, "judge": "equal", "mistakes": wrong,
                 "arg_names": arg_names or [f"argument {i + 1}" for i in range(len(args))],
                 "fields": fields or ["output"], "check_parameter_type": check_parameter_type}
        if "modules_after" in case_["fields"]:  # each module argument as built, before the call: what was not copied
            case_["modules_before"] = [self._reference({"kind": "module", "target": a["$module"]["target"],
                                                        "init_args": a["$module"].get("init_args", []),
                                                        "seed": a["$module"].get("seed"),
                                                        "construct_only": True})["params"]
                                       for a in args if isinstance(a, dict) and "$module" in a]
        return case_, expected

    # -- modules ---------------------------------------------------------------------------------
    def _module_request(self, init_args, init_kwargs, seed) -> dict:
        return {"kind": "module", "target": self.step, "init_args": list(init_args),
                "init_kwargs": init_kwargs or {}, "seed": seed}

    def parameters(self, init_args, *, case: str, seed: int, public: bool = False, init_kwargs: dict | None = None,
                   shapes_only: bool = False, expect_count: int | None = None) -> dict:
        """Parameters drawn after ``torch.manual_seed(seed)``: names, order, shapes, values; buffers."""
        return self._evaluate(*self._cached(case, lambda: self._build_parameters(
            init_args, case, seed, public, init_kwargs, shapes_only, expect_count)))

    def _build_parameters(self, init_args, case, seed, public, init_kwargs, shapes_only, expect_count):
        request = {**self._module_request(init_args, init_kwargs, seed), "construct_only": True}
        if shapes_only:
            request["shapes_only"] = True
        expected = self._reference(request)
        case_ = {"name": case, "public": public, "request": request, "judge": "parameters",
                 "shapes_only": shapes_only}
        if not shapes_only and _sampled(expected["params"]):
            request["param_stride"] = case_["param_stride"] = SAMPLE_STRIDE
            expected = self._reference(request)
        if expect_count is not None:
            case_["expect_count"] = expect_count
        return case_, expected

    def module(self, init_args, x, *, case: str, seed: int, public: bool = False, init_kwargs: dict | None = None,
               train: bool = False, forward_seed: int | None = None, grad: bool = False,
               mistakes: dict[str, Callable] | None = None, with_parameters: bool = False,
               before: list[tuple] | None = None) -> dict:
        """Forward (and backward, when ``grad``) with the reference's weights loaded into the student's module.

        ``before``: earlier calls on the same instance, as ``(x, train)`` or ``(x, train, forward_seed)``,
        run first (other lengths, the other mode); only the last call is judged, so state the module keeps
        between calls shows there.

        ``with_parameters``: first compare the parameters the module drew after ``torch.manual_seed(seed)``
        (as :meth:`parameters` does), from the same construction, then the forward pass with those (equal
        to ours when they pass): one module built instead of two, and no weights sent.
        """
        return self._evaluate(*self._cached(case, lambda: self._build_module(
            init_args, x, case, seed, public, init_kwargs, train, forward_seed, grad, mistakes, with_parameters,
            before)))

    def _build_module(self, init_args, x, case, seed, public, init_kwargs, train, forward_seed, grad, mistakes,
                      with_parameters=False, before=None):
        request = self._module_request(init_args, init_kwargs, seed)
        request.update(forward_args=[x], train=train, forward_seed=forward_seed)
        if before:
            request["calls_before"] = [{"args": [call[0]], "train": bool(call[1]),
                                        "seed": call[2] if len(call) > 2 else None} for call in before]
        if grad:
            request["grad_args"] = [0]
        expected = self._reference(request)
        ours = {n: t for n, t in expected["params"]}
        if not with_parameters:
            request["load_params"] = ours
        # else the student's module keeps its own seeded parameters: they are judged first, so the forward
        # pass is judged only when they are ours (and millions of values need not be sent to the worker)
        if grad:
            request["upstream"] = upstream_for(self.step, case, expected["output"])
            expected = self._reference(request)
        if with_parameters:
            if _sampled(ours.items()):
                request["param_stride"] = SAMPLE_STRIDE
            expected = self._reference(request)
        else:
            request["want_params"] = False  # the student's module gets ours loaded: no need to send them back
        wrong = {}
        if mistakes:
            params = ours
            for label, fn in mistakes.items():
                if isinstance(fn, dict):  # the reference's own answer to the request changed so (train=True)
                    wrong[label] = self._reference({**request, **fn, "upstream": None}).get("output")
                    continue
                with torch.no_grad():
                    wrong[label] = fn(params, x.detach())
        case_ = {"name": case, "public": public, "request": request, "judge": "equal", "mistakes": wrong,
                 "arg_names": ["the input x"]}
        if with_parameters:
            case_.update(with_parameters=True, param_stride=request.get("param_stride"))
        return case_, expected

    def raises(self, exception: str, init_args, *, case: str, public: bool = False,
               init_kwargs: dict | None = None, also_accepted: tuple[str, ...] = ()) -> dict:
        """Constructing the module with ``init_args`` must raise ``exception`` (a class name), or one of
        ``also_accepted`` (the book's ``assert`` raises AssertionError)."""
        return self._evaluate(*self._cached(case, lambda: self._build_raises(exception, init_args, case, public,
                                                                            init_kwargs, also_accepted)))

    def _build_raises(self, exception, init_args, case, public, init_kwargs, also_accepted=()):
        request = {**self._module_request(init_args, init_kwargs, 0), "construct_only": True, "expect_error": exception}
        expected = self._reference(request)
        if expected.get("ok") or expected["error"]["type"] != exception:
            raise RuntimeError(f"the reference does not raise {exception} for {init_args}")
        case_ = {"name": case, "public": public, "request": request, "judge": "raises", "exception": exception}
        if also_accepted:
            case_["also_accepted"] = list(also_accepted)
        return case_, {}

    def accepts(self, refusals: tuple[str, ...], init_args, *, case: str, public: bool = False,
                init_kwargs: dict | None = None) -> dict:
        """Constructing the module with ``init_args`` must not raise any of ``refusals`` (the errors a ``raises`` case
        of the same count expects for invalid arguments): beside those cases, the count shows that the student's code
        tells valid arguments from invalid ones (``judge_accepts``)."""
        def build():
            request = {**self._module_request(init_args, init_kwargs, 0), "construct_only": True, "want_params": False}
            expected = self._reference(request)
            if not expected.get("ok"):
                raise RuntimeError(f"the reference refuses {init_args}, which accepts() says are valid")
            return {"name": case, "public": public, "request": request, "judge": "accepts",
                    "refusals": list(refusals), "why": case}, {}

        return self._evaluate(*self._cached(case, build))

    def dropout(self, x: torch.Tensor, p: float, *, case: str, seed: int, public: bool = False,
                needs_graph: bool = False) -> dict:
        """Judge dropout by its properties (machine-independent, so it may be public)."""
        def build():
            request = {"kind": "function", "target": self.step, "args": [x, p], "seed": seed,
                       "grad_args": [0] if needs_graph else []}
            if needs_graph:  # the graph is judged by the gradient it gives for an upstream of ours (judge_dropout)
                request["upstream"] = upstream_for(self.step, case, x)
            return {"name": case, "public": public, "request": request, "judge": "dropout", "p": p,
                    "input": x.detach().clone(), "needs_graph": needs_graph}, {}

        return self._evaluate(*self._cached(case, build))

    def module_dropout(self, init_args, x: torch.Tensor, p: float, *, heads: int, case: str, seed: int,
                       forward_seed: int, public: bool = False, params: dict | None = None) -> dict:
        """A module's dropout in training mode, judged by its properties (no seeded mask: machine-independent, so
        it may be public). ``x`` has one token (T = 1): each head's one attention weight is 1, so dropout leaves each
        head's output all zeros or the eval-mode output / (1 - p). The reference's weights are loaded, ``params``
        replacing some (an identity output projection keeps the heads' outputs apart)."""
        def build():
            request = {**self._module_request(init_args, None, seed), "forward_args": [x], "train": False,
                       "forward_seed": forward_seed}
            ours = dict(self._reference(request)["params"])
            request.update(load_params={**ours, **(params or {})}, want_params=False)
            expected = self._reference(request)  # in eval mode, where dropout changes nothing
            return {"name": case, "public": public, "request": {**request, "train": True}, "judge": "module_dropout",
                    "p": p, "heads": heads, "arg_names": ["the input x"]}, expected

        return self._evaluate(*self._cached(case, build))
