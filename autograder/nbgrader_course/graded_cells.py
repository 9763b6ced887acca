"""Write the source of a notebook's test cells: one call of the checking helper per case.

A count's document cases are written in the open, so students run them while they work; its other
cases (randomized inputs, seeded dropout, GPT-2's weights) sit between nbgrader's ``### BEGIN HIDDEN
TESTS`` / ``### END HIDDEN TESTS`` markers, which ``nbgrader generate_assignment`` removes from the
students' copy and ``nbgrader autograde`` puts back.
"""
from __future__ import annotations

import torch

from . import literals
from .collect import Case

BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"

COUNT_WORDS = {
    "values": "the outputs on the course documents' inputs",
    "gradients": "the gradients, for a fixed upstream gradient, w.r.t. every input (and parameter)",
    "randomized": "other shapes, batch sizes, dtypes and seeds (hidden)",
    "parameters": "the parameters drawn after seeding: names, order, shapes, values",
    "forward": "the forward pass, with the reference's weights loaded into your module",
    "dropout": "training mode with dropout, the same seed as the reference (hidden)",
    "properties": "what dropout must do: zeros or x / (1 - p), about 1 - p kept, the graph kept",
    "seeded": "the book's seeded dropout example (hidden)",
    "errors": "invalid arguments must raise, valid ones must not",
}


def _arg(value, built: list | None) -> str:
    if isinstance(value, dict) and "$module" in value:
        return f"Holder({literals.named(built)})"
    if isinstance(value, dict) and "$gen" in value:
        return f"Gen({int(value['$gen'])})"
    if isinstance(value, dict) and "$dtype" in value:
        return f"torch.{value['$dtype']}"
    return literals.value(value)


def _call(helper: str, target: str, case: Case, items: list[tuple[str, str]]) -> str:
    head = f'{helper}({target}, "{case.step}", "{case.count}", case={case.spec["name"]!r},'
    body = ",\n".join(f"    {key}={text}" for key, text in items)
    return f"{head}\n{body})"


def _likely(case: Case) -> list[tuple[str, str]]:
    wrong = {label: t for label, t in (case.spec.get("mistakes") or {}).items() if isinstance(t, torch.Tensor)}
    if not wrong:
        return []
    # what each likely mistake gives: read by the check, never by a student (in the data file, in the open)
    inner = "".join(f"\n        {label!r}: {literals.kept_aside(t)}," for label, t in wrong.items())
    return [("likely", "{" + inner + "\n    }")]


def _public(case: Case) -> list[tuple[str, str]]:
    return [] if case.public else [("public", "False")]


def function_call(case: Case, target: str) -> str:
    request, expected, spec = case.spec["request"], case.expected, case.spec
    args = ", ".join(_arg(a, case.modules.get(i)) for i, a in enumerate(request["args"]))
    items = [("args", f"[{args}]")]
    names = spec.get("arg_names") or []
    if any(not n.startswith("argument ") for n in names):
        items.append(("names", literals.value(names)))
    if request.get("kwargs"):
        items.append(("kwargs", literals.value(request["kwargs"])))
    if request.get("seed") is not None:
        items.append(("seed", str(request["seed"])))
    items += _public(case)
    items.append(("expected", literals.value(expected.get("output"))))
    if spec.get("check_parameter_type") and isinstance(expected.get("output_facts"), list):
        items.append(("parameters",
                      literals.value([bool((f or {}).get("parameter")) for f in expected["output_facts"]])))
    if "modules_after" in spec.get("fields", []):
        # as the worker answers it: each module argument's (name, value) parameters, in argument order
        items.append(("modules_after", "[" + ", ".join(literals.named(p) for p in expected["modules_after"]) + "]"))
        if spec.get("modules_before"):  # as they were built: a parameter the call left so was never copied into
            items.append(("modules_before", "[" + ", ".join(literals.named(p) for p in spec["modules_before"]) + "]"))
    if request.get("upstream") is not None:
        items.append(("grad", literals.value(request.get("grad_args", []))))
        items.append(("upstream", literals.value(request["upstream"])))
        grads = {int(k): v for k, v in (expected.get("input_grads") or {}).items()}
        items.append(("expected_grads", "{" + ", ".join(f"{k}: {literals.value(v)}" for k, v in grads.items()) + "}"))
    items += _likely(case)
    return _call("check_function", target, case, items)


def module_call(case: Case, target: str) -> list[str]:
    """The call, preceded by a comment when the reference's weights are too large to ship."""
    request, expected = case.spec["request"], case.expected
    items = [("init", literals.value(request["init_args"]))]
    if request.get("init_kwargs"):
        items.append(("init_kwargs", literals.value(request["init_kwargs"])))
    items.append(("seed", literals.value(request.get("seed"))))
    weights = list((request.get("load_params") or {}).items())
    note = []
    if any(t.numel() > literals.DIGEST_OVER for _, t in weights):
        # The parameters case before this one checked that the student's weights, drawn after the
        # same seed, equal the reference's: loading them again would change nothing.
        note = ["# The reference's weights are too large to ship: your module keeps the ones it drew after",
                "# the same seed, which the parameters case above compared with the reference's."]
        weights = []
    if weights:
        items.append(("weights", literals.named(weights, aside=True)))  # the reference's: in the data file
    if request.get("calls_before"):
        # earlier calls on the same instance (other lengths, the other mode), as grade autograde makes them
        calls = [f"({literals.value(c['args'][0])}, {bool(c.get('train'))}, {literals.value(c.get('seed'))})"
                 for c in request["calls_before"]]
        items.append(("before", "[" + ", ".join(calls) + "]"))
    if request.get("train"):
        items.append(("train", "True"))
    if request.get("forward_seed") is not None:
        items.append(("forward_seed", str(request["forward_seed"])))
    x = request["forward_args"][0]
    items.append(("x", literals.value(x)))
    items += _public(case)
    items.append(("expected", literals.value(expected.get("output"))))
    if case.spec.get("judge") == "module_dropout":  # judged by its properties against this eval-mode answer
        items.append(("dropout", f"({literals.value(case.spec['p'])}, {int(case.spec['heads'])})"))
    if request.get("upstream") is not None:
        items.append(("upstream", literals.value(request["upstream"])))
        x_grad = (expected.get("input_grads") or {}).get("0")
        items.append(("expected_grads", "{'x': " + literals.value(x_grad) + "}"))
        # the parameters' gradients, as the reference's weights give them: in the data file (said, never read through)
        items.append(("expected_param_grads", "{" + "".join(
            f"\n        {n!r}: {literals.kept_aside(g)}," for n, g in (expected.get("param_grads") or {}).items())
                      + "\n    }"))
    items += _likely(case)
    return [*note, _call("check_module", target, case, items)]


def parameters_call(case: Case, target: str) -> str:
    request, expected, spec = case.spec["request"], case.expected, case.spec
    items = [("init", literals.value(request["init_args"]))]
    if request.get("init_kwargs"):
        items.append(("init_kwargs", literals.value(request["init_kwargs"])))
    items.append(("seed", literals.value(request.get("seed"))))
    items += _public(case)
    if spec.get("shapes_only"):
        params = [(n, list(s) if isinstance(s, (list, tuple)) else list(s.shape)) for n, s in expected["params"]]
        items.append(("expected", "[" + ", ".join(f"({n!r}, {s})" for n, s in params) + "]"))
    else:
        items.append(("expected", literals.named(expected["params"])))
    items.append(("buffers", literals.value([(n, list(s)) for n, s in expected.get("buffers", [])])))
    if "expect_count" in spec:
        items.append(("total", str(int(spec["expect_count"]))))
    return _call("check_parameters", target, case, items)


def raises_call(case: Case, target: str) -> str:
    request = case.spec["request"]
    items = [("init", literals.value(request["init_args"]))]
    if request.get("init_kwargs"):
        items.append(("init_kwargs", literals.value(request["init_kwargs"])))
    items.append(("exception", repr(case.spec["exception"])))
    if case.spec.get("also_accepted"):  # the book's assert, where the course documents teach it
        items.append(("also_accepted", literals.value(list(case.spec["also_accepted"]))))
    items += _public(case)
    return _call("check_raises", target, case, items)


def accepts_call(case: Case, target: str) -> str:
    request = case.spec["request"]
    items = [("init", literals.value(request["init_args"]))]
    if request.get("init_kwargs"):
        items.append(("init_kwargs", literals.value(request["init_kwargs"])))
    items.append(("refusals", literals.value(list(case.spec["refusals"]))))
    items += _public(case)
    return _call("check_accepts", target, case, items)


def dropout_call(case: Case, target: str) -> str:
    request, spec = case.spec["request"], case.spec
    items = [("x", literals.value(spec["input"])), ("p", literals.value(spec["p"])),
             ("seed", literals.value(request.get("seed")))]
    if spec.get("needs_graph"):
        items.append(("needs_graph", "True"))
        items.append(("upstream", literals.value(request["upstream"])))
    items += _public(case)
    return _call("check_dropout", target, case, items)


def case_code(case: Case, data: literals.DataFile | None = None) -> list[str]:
    """The lines that check one case; a case in the open puts its long tensors into ``data``."""
    with literals.storing(data if case.public else None):
        return _case_code(case)


def _case_code(case: Case) -> list[str]:
    target = case.step.split(".", 1)[1]
    judge, kind = case.spec.get("judge", "equal"), case.spec["request"]["kind"]
    if judge == "parameters":
        return [parameters_call(case, target)]
    if judge == "raises":
        return [raises_call(case, target)]
    if judge == "accepts":
        return [accepts_call(case, target)]
    if judge == "dropout":
        return [dropout_call(case, target)]
    if kind == "module":
        return module_call(case, target)
    return [function_call(case, target)]


def count_cell(step: str, count: str, points: float, cases: list[Case], data: literals.DataFile | None = None) -> str:
    """The source of the test cell of one count: document cases in the open (their long tensors in
    ``data``, the file beside the notebooks), the rest hidden (theirs in the cell: the file is released)."""
    what = COUNT_WORDS.get(count, count)
    plural = "point" if points == 1 else "points"
    lines = [f"# {step} [{count}], {points:g} {plural}: {what}."]
    shown = [c for c in cases if c.public]
    hidden = [c for c in cases if not c.public]
    if not shown:
        lines.append("# Its cases are hidden: they run when your notebook is graded.")
    for case in shown:
        lines += case_code(case, data)
    if hidden:
        lines.append(BEGIN_HIDDEN)
        for case in hidden:
            lines += case_code(case, data)
        lines.append(END_HIDDEN)
    return "\n".join(lines)
