"""A worker's answer as the trusted side takes it: a claim, cut down to what is judged.

A worker runs the student's code, so what it sends is the student's to write: ctypes, a thread of its own or its
own frames on the channel can make it say anything. The trusted side therefore takes from an answer only what it
can judge by itself, and scores nothing else:

- values and gradients (the output, parameters, gradients for the upstream the trusted side chose): compared with
  the reference's, on this side;
- whether an argument was modified in place: read from the argument buffer the trusted side owns
  (``argument_buffer.py``), never from the answer;
- the output's facts (its class, ``nn.Parameter``, requires_grad, grad_fn): kept for the student's feedback only;
- an error: the student's own (its type, message and place are the student's words, shown to that student alone
  and redacted on hidden counts whatever the type is called); never a kind of problem. Kinds (a limit, a worker that
  died, a broken protocol, a file staging could not read) are set by the trusted side from what it saw itself
  (``grading/runner.py``), in the ``kind`` key, which no worker answer keeps;
- the warnings it says Python and torch raised about the student's files, and what it says the module's __init__
  left unregistered: words for the student, cut to their shape here (``warnings``, ``unregistered``); a warning is
  said only once the trusted side has found its file and line among the student's own (``grading/own_source.py``).

Everything else a worker puts in an answer is dropped here. ``tests/unit/test_worker_claims.py`` holds each rule.
"""
from __future__ import annotations

import torch

#: the keys of an ``ok`` answer the trusted side reads
OK_KEYS = ("output", "params", "param_shapes", "buffers", "input_grads", "param_grads", "backward", "output_facts",
           "modules_after")
#: what a backward can have been (``worker/runtime.py``)
BACKWARDS = ("done", "not a tensor", "no graph", "shape")
#: the phases a student's error can happen in (``worker/runtime.py``, ``worker/child.py``)
PHASES = ("setup", "__init__", "loading the reference weights", "forward", "call", "backward", "returning the result",
          "reading the request")
MAX_TYPE, MAX_MESSAGE, MAX_TEXT = 100, 10_000, 400
#: at most this many warnings and unregistered attributes are kept from one answer
MAX_FACTS = 20
#: what an unregistered attribute can hold (``feedback/structure.py``)
UNREGISTERED = ("modules", "tensors", "tensor")


class NotAnAnswer(ValueError):
    """What came back is no answer a worker makes (not a dict with a boolean ``ok``)."""


def _text(value, limit: int) -> str:
    return value[:limit] if type(value) is str else ""


def _where(where) -> dict | None:
    if type(where) is not dict:
        return None
    out = {"file": _text(where.get("file"), 200) or None, "line": where.get("line"),
           "function": _text(where.get("function"), 200) or None}
    if type(out["line"]) is not int:
        out["line"] = None
    if "text" in where:
        out["text"] = _text(where.get("text"), MAX_TEXT)
    if type(where.get("column")) is int:
        out["column"] = where["column"]
    return out if out["file"] else None


def warnings_said(claimed) -> list[dict]:
    """A worker's warnings, as data of their shape only: file, line, category, message (``worker/warnings_seen.py``)."""
    kept = []
    for item in claimed[:MAX_FACTS] if type(claimed) is list else ():
        if type(item) is dict and type(item.get("line")) is int and _text(item.get("file"), 200):
            kept.append({"file": item["file"][:200], "line": item["line"],
                         "category": _text(item.get("category"), MAX_TYPE) or "Warning",
                         "message": _text(item.get("message"), 500)})
    return kept


def unregistered_said(claimed) -> list[dict]:
    """A worker's word on what a module's __init__ left unregistered (``feedback/structure.py``), of its shape only."""
    kept = []
    for item in claimed[:MAX_FACTS] if type(claimed) is list else ():
        if type(item) is dict and item.get("kind") in UNREGISTERED and _text(item.get("name"), 200):
            kept.append({"name": item["name"][:200], "kind": item["kind"],
                         "container": _text(item.get("container"), 20),
                         "requires_grad": item.get("requires_grad") is True})
    return kept


def student_error(error, phase: str | None = None) -> dict:
    """An error report of a worker's, as the student's own: type, message, place, phase, whether the step was left
    as a stub. Nothing in it is a kind of problem."""
    error = error if type(error) is dict else {}
    said = error.get("phase")
    out = {"type": _text(error.get("type"), MAX_TYPE) or "Exception",
           "message": _text(error.get("message"), MAX_MESSAGE),
           "where": _where(error.get("where")),
           "phase": phase or (said if said in PHASES else "the call"),
           "not_attempted": error.get("not_attempted") is True}
    unregistered = unregistered_said(error.get("unregistered"))
    if unregistered:
        out["unregistered"] = unregistered
    return out


def taken(answer, request: dict, modified: list[int] | None, steps: frozenset[str] = frozenset()) -> dict:
    """``answer`` as judged: the keys above, an error as the student's, and ``modified_args`` from the argument
    buffer (``modified``), or, where no buffer could be handed over (a worker spawned without descriptor passing:
    ``grade check`` on Windows), from the worker's own ``args_after``. ``steps``: the unit's steps, the only names a
    ``missing`` answer may give."""
    if type(answer) is not dict or type(answer.get("ok")) is not bool:
        raise NotAnAnswer("not an answer")
    warned = warnings_said(answer.get("warnings"))
    if answer["ok"]:
        out = {"ok": True, **{key: answer[key] for key in OK_KEYS if key in answer}}
        if out.get("backward") not in BACKWARDS:
            out.pop("backward", None)
        if modified is None:
            modified = modified_by_word(request, answer.get("args_after"))
        out["modified_args"] = list(modified)
        unregistered = unregistered_said(answer.get("unregistered"))
        if unregistered:
            out["unregistered"] = unregistered
        if warned:
            out["warnings"] = warned
        return out
    out = {"ok": False, "error": student_error(answer.get("error"))}
    missing = (answer.get("error") or {}).get("missing") if type(answer.get("error")) is dict else None
    if type(missing) is str and missing in steps:
        out["error"]["missing"] = missing
    if warned:
        out["warnings"] = warned
    return out


def modified_by_word(request: dict, after) -> list[int]:
    """The arguments whose copies after the call (``args_after``) differ from what was sent: the reference's, in the
    trusted process; a worker's word only where no buffer could be handed to it (its own ``grade check``)."""
    sent = request.get("forward_args") if request.get("kind") == "module" else request.get("args")
    if not isinstance(sent, (list, tuple)):
        return []
    if not isinstance(after, (list, tuple)):
        return [i for i, a in enumerate(sent) if isinstance(a, torch.Tensor)]
    changed = []
    for i, before in enumerate(sent):
        if not isinstance(before, torch.Tensor):
            continue
        now = after[i] if i < len(after) else None
        if not isinstance(now, torch.Tensor) or now.shape != before.shape or now.dtype != before.dtype:
            changed.append(i)
        elif not torch.equal(now, before) and not bool(((now == before) | (now.isnan() & before.isnan())).all()):
            changed.append(i)
    return changed
