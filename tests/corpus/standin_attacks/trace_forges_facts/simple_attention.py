"""An attack: bug_inplace_input (normalize_sum divides its input in place), with a tracer that forges the facts.

A trace function installed at import (``sys.settrace``) sees every frame the worker runs after it: it keeps a
copy of normalize_sum's arguments as the call begins, and when the worker's ``run`` returns its answer, it puts
those copies in place of the arguments sent back, so the trusted side finds no input modified in place. The
values are the student's own (right); only the facts are forged. Its control (``forges_facts_control``)
is the same bug without the tracer: a sound grader gives this no more.
"""
import sys

import torch

_before = []


def _on_return(frame, event, arg):
    if event == "return" and isinstance(arg, dict) and isinstance(arg.get("args_after"), list) and _before:
        arg["args_after"] = _before.pop()
    return _on_return


def _on_call(frame, event, arg):
    if event != "call":
        return None
    if frame.f_code.co_name == "normalize_sum":
        _before.append([frame.f_locals["scores"].detach().clone()])
    elif frame.f_code.co_name == "run" and frame.f_code.co_filename.endswith("runtime.py"):
        _before.clear()  # this request's own
        return _on_return
    return None


sys.settrace(_on_call)


def attention_scores(inputs, query):
    """Attention scores of one query against every input token.

    Shapes: inputs [T, d], query [d] -> scores [T], where scores[i] = dot(inputs[i], query).
    Hint: a loop of ``torch.dot`` works; so does one matrix-vector product.
    """
    return inputs @ query


def normalize_sum(scores):
    """Normalize scores so that they sum to 1, by dividing by their sum (not a softmax).

    Shapes: scores [T] -> weights [T].
    Hint: ``scores / scores.sum()``.
    """
    scores /= scores.sum()
    return scores


def softmax_naive(x):
    """The naive softmax along dim 0: exp(x) / sum(exp(x)).

    Shapes: x [T] -> [T]; every entry positive, summing to 1.
    Hint: ``torch.exp`` and ``.sum(dim=0)``; no max-subtraction is expected here.
    """
    return torch.exp(x) / torch.exp(x).sum(dim=0)


def context_vector(inputs, attn_weights):
    """Context vector: the attention-weighted sum of the input tokens.

    Shapes: inputs [T, d], attn_weights [T] -> context [d] = sum_i attn_weights[i] * inputs[i].
    Hint: a loop accumulating ``attn_weights[i] * inputs[i]``, or one product ``attn_weights @ inputs``.
    """
    return attn_weights @ inputs


def all_attention_scores(inputs):
    """Attention scores between every pair of tokens.

    Shapes: inputs [T, d] -> scores [T, T], where scores[i, j] = dot(inputs[i], inputs[j]).
    Hint: a double loop works; ``inputs @ inputs.T`` does it at once.
    """
    return inputs @ inputs.T


def all_attention_weights(attn_scores):
    """Attention weights for every query: softmax over the last dim, so each row sums to 1.

    Shapes: attn_scores [T, T] -> weights [T, T].
    Hint: ``torch.softmax(..., dim=-1)``; dim=0 would normalize columns instead of rows.
    """
    return torch.softmax(attn_scores, dim=-1)


def all_context_vectors(inputs, attn_weights):
    """All context vectors at once: row i is the weighted sum of the inputs with weights row i.

    Shapes: inputs [T, d], attn_weights [T, T] -> contexts [T, d].
    Hint: one matrix product; mind the order of the operands.
    """
    return attn_weights @ inputs
