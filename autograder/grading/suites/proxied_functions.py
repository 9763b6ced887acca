"""Which function steps a stand-in proxy can stand in for, learned from the reference's own answers.

A function stand-in (``worker/standins.py``, ``op: "call"``) sends the tensors it is given to the reference
worker and returns what comes back: plain tensors, gradients through its inputs. That is the step's whole
answer only when the step is a function of its tensor arguments. It is not for a step that

- creates trainable tensors (``init_qkv``'s ``nn.Parameter``s come back plain, requires_grad False);
- takes a module or a ``torch.Generator`` (neither travels; their changes never come back: Exercise 3.1's
  ``transfer_weights``, ``dot_product_variance``);
- changes a tensor it was given in place (the change happens on the reference worker's copy).

Such a step is not held as a stand-in: a student's code that calls it runs the student's own, as it would
without stand-ins (a bug there may cost twice, never a correct step's points).
"""
from __future__ import annotations



def _carries(value, markers: tuple[str, ...]) -> bool:
    if isinstance(value, dict):
        return any(m in value for m in markers) or any(_carries(v, markers) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_carries(v, markers) for v in value)
    return False


def _creates_leaves(facts) -> bool:
    """Whether the answer holds a tensor the step created to be trained (a leaf that requires grad)."""
    for fact in facts if isinstance(facts, list) else [facts]:
        if isinstance(fact, dict) and fact.get("requires_grad") and fact.get("grad_fn") is None:
            return True
    return False


def travels(request: dict, answer: dict) -> bool:
    """Whether a function proxy gives this case's whole answer: see the module's docstring."""
    if request.get("kind") != "function" or not isinstance(answer, dict) or not answer.get("ok"):
        return True  # a module step, or a case the reference refused: nothing learned here
    return not (_creates_leaves(answer.get("output_facts"))
                or _carries(request.get("args"), ("$module", "$gen"))
                or _carries(request.get("kwargs"), ("$module", "$gen"))
                or bool(answer.get("modified_args")))


def held_back(cache: dict, kinds: dict[str, str]) -> set[str]:
    """The function steps no stand-in proxy is held for, from the cached cases ``(step, ...) -> (case, answer)``."""
    return {key[0] for key, (case, answer) in cache.items()
            if kinds.get(key[0]) == "function" and not travels(case["request"], answer)}
