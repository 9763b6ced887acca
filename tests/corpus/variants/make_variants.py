"""Build the one-step bug variants of issue 21 from ``solutions/``: each is the reference with one edit.

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
    "bug_book_loops_float32": [("simple_attention", "    return inputs @ query\n", """    scores = torch.empty(inputs.shape[0])
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
