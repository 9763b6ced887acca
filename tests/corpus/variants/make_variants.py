"""Build the one-step bug variants from ``solutions/``: each is the reference with one edit.

``python tests/corpus/variants/make_variants.py`` rewrites ``tests/corpus/submissions/<name>/``; their labels
(manifest.json) come from ``tests/corpus/label.py``, a differential checker that uses none of the kit's judges.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "tests" / "corpus" / "submissions"

# name -> (module, old text, new text), the one edit; a list for several edits in one step
VARIANTS: dict[str, list[tuple[str, str, str]]] = {
    "bug_mha_caches_kv": [("multihead_attention", """        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries""", """        b, num_tokens, d_in = x.shape
        if getattr(self, "_keys", None) is None:  # cached on the first call, reused on every later one
            self._keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self._keys
        queries""")],
    "bug_causal_mask_overwritten": [("causal_attention", """        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values""", """        self.mask = self.mask[:num_tokens, :num_tokens]  # the buffer itself becomes its slice
        attn_scores = attn_scores.masked_fill(self.mask.bool(), -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values""")],
    "bug_gpt2_dropout": [("multihead_attention", "context_length=1024, dropout=0.0, num_heads=12",
                          "context_length=1024, dropout=0.1, num_heads=12")],
    "bug_normalize_abs": [("simple_attention", "    return scores / scores.sum()\n",
                           "    return torch.nn.functional.normalize(scores, p=1, dim=0)\n")],
    "bug_softmax_no_max": [("trainable_attention", "    return torch.softmax(attn_scores / d_k**0.5, dim=-1)\n",
                            "    e = torch.exp(attn_scores / d_k**0.5)\n    return e / e.sum(dim=-1, keepdim=True)\n")],
    # a SelfAttention_v1 built on the student's own earlier helpers, one of them wrong
    "bug_v1_own_helpers_scale": [
        ("trainable_attention", "    return torch.softmax(attn_scores / d_k**0.5, dim=-1)\n",
         "    return torch.softmax(attn_scores / d_k, dim=-1)\n"),
        ("trainable_attention", """        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values""", """        keys = project(x, self.W_key)
        queries = project(x, self.W_query)
        values = project(x, self.W_value)
        attn_weights = scaled_attention_weights(queries @ keys.T, keys.shape[-1])
        return context_vector(attn_weights, values)""")],
    # its control: the same SelfAttention_v1 on its own helpers, every one right
    "correct_v1_own_helpers": [
        ("trainable_attention", """        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values""", """        keys = project(x, self.W_key)
        queries = project(x, self.W_query)
        values = project(x, self.W_value)
        attn_weights = scaled_attention_weights(queries @ keys.T, keys.shape[-1])
        return context_vector(attn_weights, values)""")],
    # a SelfAttention_v1 whose __init__ draws its weights with the student's init_qkv (no proxy can stand in for it)
    "correct_v1_init_qkv": [("trainable_attention", """        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
""", """        self.W_query, self.W_key, self.W_value = init_qkv(d_in, d_out)
""")],
    # a CausalAttention on the student's causal_attention_weights and apply_dropout (a random draw through a proxy)
    "correct_causal_own_helpers": [("causal_attention", """        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)""", """        attn_weights = causal_attention_weights(attn_scores, keys.shape[-1])
        if self.training and self.dropout.p > 0:
            attn_weights = apply_dropout(attn_weights, self.dropout.p)""")],
    "bug_book_loops_float32": [("simple_attention", "    return inputs @ query\n", """    scores = torch.empty(inputs.shape[0])
    for i, x_i in enumerate(inputs):
        scores[i] = torch.dot(x_i, query)
    return scores
""")],
    # each earns a public case its bug fails (float64 in, float32 out; a batch of two)
    "bug_query_scores_loop_float32": [("trainable_attention", "    return query @ keys.T\n", """    scores = torch.empty(keys.shape[0])  # the book's loop: float32 whatever the input
    for i, k_i in enumerate(keys):
        scores[i] = torch.dot(query, k_i)
    return scores
""")],
    "bug_scaled_weights_float32": [("trainable_attention", "    return torch.softmax(attn_scores / d_k**0.5, dim=-1)\n",
                                    "    return torch.softmax(attn_scores.float() / d_k**0.5, dim=-1)\n")],
    "bug_trainable_context_loop_float32": [("trainable_attention", '    """\n    return attn_weights @ values\n', """    \"\"\"
    context = torch.zeros(values.shape[1])  # the book's loop: float32 whatever the input
    for i, v_i in enumerate(values):
        context += attn_weights[i] * v_i
    return context
""")],
    "bug_causal_weights_loop_float32": [("causal_attention", """    T = attn_scores.shape[-1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=attn_scores.device), diagonal=1)
    masked = attn_scores.masked_fill(future, -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)""", """    T = attn_scores.shape[-1]
    weights = torch.zeros(attn_scores.shape)  # row by row over the past only: float32 whatever the input
    for i in range(T):
        weights[..., i, :i + 1] = torch.softmax(attn_scores[..., i, :i + 1] / d_k**0.5, dim=-1)
    return weights""")],
    "bug_causal_weights_softmax_dim1": [("causal_attention", "    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
                                         "    return torch.softmax(masked / d_k**0.5, dim=1)\n")],
    "bug_renorm_sum_dim1": [("causal_attention", "    return masked / masked.sum(dim=-1, keepdim=True)\n",
                             "    return masked / masked.sum(dim=1, keepdim=True)\n")],
    "bug_renorm_loop_float32": [("causal_attention", """    T = attn_weights.shape[-1]
    mask = torch.tril(torch.ones(T, T, dtype=attn_weights.dtype, device=attn_weights.device))
    masked = attn_weights * mask
    return masked / masked.sum(dim=-1, keepdim=True)""", """    out = torch.zeros(attn_weights.shape)  # row by row, the past over its own sum: float32 whatever the input
    for i in range(attn_weights.shape[-1]):
        past = attn_weights[..., i, :i + 1]
        out[..., i, :i + 1] = past / past.sum(dim=-1, keepdim=True)
    return out""")],
    # a squeeze() that drops the size-1 dims: harmless for a batch of one (the weights broadcast), but with one
    # token (T = 1) it collapses the token dims too
    "bug_causal_squeeze_one_token": [("causal_attention",
                                      "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
                                      "        attn_weights = self.dropout(attn_weights)\n",
                                      "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1).squeeze()\n"
                                      "        attn_weights = self.dropout(attn_weights)\n")],
    # the mistakes beginners make most, as readers of the book write them, each beside a control that passes: what
    # the student reads names the mistake in their own names (tests/test_autograde_corpus.py: STUDENT_MISTAKES)
    "bug_transfer_key_not_copied": [("trainable_attention", "        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)\n", "")],
    "correct_transfer_loop": [("trainable_attention", """        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)""", """        for name in ("W_query", "W_key", "W_value"):
            getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)""")],
    "bug_mha_assert_tuple": [("multihead_attention", """        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
""", """        assert (d_out % num_heads == 0, "d_out must be divisible by num_heads")
""")],
    "bug_wrapper_no_qkv_bias": [("multihead_attention", """    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]""", """    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout) for _ in range(num_heads)]""")],
    "correct_wrapper_appended_heads": [("multihead_attention", """        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )""", """        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=qkv_bias))""")],
    "bug_wrapper_plain_list": [("multihead_attention", """        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )""", """        self.heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]""")],
    "bug_causal_keys_T": [("causal_attention", "        attn_scores = queries @ keys.transpose(1, 2)\n",
                           "        attn_scores = queries @ keys.T\n")],
    "correct_causal_keys_mT": [("causal_attention", "        attn_scores = queries @ keys.transpose(1, 2)\n",
                                "        attn_scores = queries @ keys.mT\n")],
    "bug_mha_view_no_contiguous": [("multihead_attention", "context_vec.contiguous().view(", "context_vec.view(")],
    "correct_mha_reshape": [("multihead_attention", "context_vec.contiguous().view(", "context_vec.reshape(")],
    "bug_causal_mask_hides_diagonal": [("causal_attention", "torch.triu(torch.ones(context_length, context_length), diagonal=1))",
                                        "torch.triu(torch.ones(context_length, context_length), diagonal=0))")],
    "correct_causal_tril_mask": [("causal_attention", "torch.triu(torch.ones(context_length, context_length), diagonal=1))",
                                  "torch.tril(torch.ones(context_length, context_length)))"), ("causal_attention", "        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n",
       "        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens] == 0, -torch.inf)\n")],
    "bug_mha_divide_by_head_dim": [("multihead_attention", "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
                                    "attn_weights = torch.softmax(attn_scores / self.head_dim, dim=-1)")],
    "correct_mha_sqrt_head_dim": [("multihead_attention", "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
                                   "attn_weights = torch.softmax(attn_scores / math.sqrt(self.head_dim), dim=-1)"),
                                  ("multihead_attention", "import torch\n", "import math\n\nimport torch\n")],
    "bug_causal_dropout_masked_scores": [("causal_attention", """        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)""", """        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_scores = self.dropout(attn_scores)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)""")],
    "correct_causal_dropout_inline": [("causal_attention", """        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)""", """        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))""")],
    "correct_causal_mask_sliced_apart": [("causal_attention", """        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)""",
                                          """        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)""")],
    "correct_causal_dropout_follows_mode": [("causal_attention", "        attn_weights = self.dropout(attn_weights)\n",
                                             "        attn_weights = torch.nn.functional.dropout(attn_weights, self.dropout.p, "
                                             "training=self.training)\n")],
    "correct_book_loops_dtype": [("simple_attention", "    return inputs @ query\n", """    scores = torch.empty(inputs.shape[0], dtype=inputs.dtype)
    for i, x_i in enumerate(inputs):
        scores[i] = torch.dot(x_i, query)
    return scores
""")],
}


def strip_markers(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if "### BEGIN SOLUTION" not in line
                   and "### END SOLUTION" not in line)


def build(name: str, edits: list[tuple[str, str, str]], out: Path = OUT) -> Path:
    dest = out / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for src in sorted((ROOT / "solutions").glob("*.py")):
        (dest / src.name).write_text(strip_markers(src.read_text()))
    (dest / "__init__.py").write_text('"""Sample submission (autograder test corpus)."""\n')
    for module, old, new in edits:
        path = dest / f"{module}.py"
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{name}: the edit's text is not once in {module}.py")
        path.write_text(text.replace(old, new))
    return dest


if __name__ == "__main__":
    for name in sys.argv[1:] or VARIANTS:
        print(build(name, VARIANTS[name]))
