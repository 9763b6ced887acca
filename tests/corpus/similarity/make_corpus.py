"""Build tests/corpus/similarity/submissions/: independent solutions, and planted copies disguised as students do.

    python tests/corpus/similarity/make_corpus.py

Independent (10, each correct, each written on its own): the five ``correct_*`` submissions of
tests/corpus/submissions/, the book's own solution (solutions/, the reference), and the four hand-written
styles in independent/ (functional helpers, long-hand loops, einsum/bmm, terse one-liners).

Planted copies (each of one source, disguised by the transformations below; manifest.json says which):

- copy_renamed        correct_alt_style: local names renamed, comments replaced, whitespace changed
- copy_reordered      correct_loops: functions and methods in reverse order, comments replaced
- copy_comprehension  style_verbose: loops rewritten as comprehensions, then renamed
- copy_unrolled       style_functional: loops and generators unrolled, then renamed and respaced
- copy_one_step       the book's code with a student's own touches everywhere, except
                      multihead_attention.MultiHeadAttention copied from correct_stable_softmax and renamed
"""
from __future__ import annotations

import ast
import io
import json
import re
import shutil
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT = HERE / "submissions"
MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]
INDEPENDENT_FROM_CORPUS = ["correct_loops", "correct_einsum", "correct_stable_softmax", "correct_sdpa", "correct_alt_style"]
STYLES = ["style_functional", "style_verbose", "style_bmm", "style_terse"]


# -- disguises ---------------------------------------------------------------------------------------------
def rename(source: str, mapping: dict[str, str]) -> str:
    """Rename names (not attributes, not keyword arguments' names) as a student renames variables."""
    toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
    lines = source.splitlines(keepends=True)
    edits = []
    for i, tok in enumerate(toks):
        if tok.type == tokenize.NAME and tok.string in mapping:
            prev = toks[i - 1].string if i else ""
            nxt = toks[i + 1].string if i + 1 < len(toks) else ""
            if prev == "." or (nxt == "=" and _in_call(toks, i)):
                continue
            edits.append((tok.start, tok.end, mapping[tok.string]))
    for (row, col), (_, end), new in reversed(edits):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[end:]
    return "".join(lines)


def _in_call(toks, i) -> bool:
    depth = 0
    for tok in reversed(toks[:i]):
        if tok.string in ")]}":
            depth += 1
        elif tok.string in "([{":
            if depth == 0:
                return tok.string == "("
            depth -= 1
        elif tok.type == tokenize.NEWLINE:
            return False
    return False


def recomment(source: str, note: str) -> str:
    """Drop every comment and docstring-free line comment; put the copier's own comment above each definition."""
    toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    lines = source.splitlines(keepends=True)
    for tok in reversed(toks):
        row, col = tok.start
        line = lines[row - 1]
        lines[row - 1] = (line[:col].rstrip() + "\n") if line[:col].strip() else ""
    out = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(("def ", "class ")):
            indent = line[: len(line) - len(stripped)]
            name = re.match(r"(?:def|class)\s+(\w+)", stripped).group(1)
            out.append(f"{indent}# {note} {name}\n")
        out.append(line)
    return "".join(out)


def respace(source: str) -> str:
    """Different whitespace: a blank line after every statement inside a function, spaces inside brackets."""
    out = []
    for line in source.splitlines(keepends=True):
        line = re.sub(r"\(([^()\"']+)\)", lambda m: "( " + m.group(1).strip() + " )", line)
        out.append(line)
        if line.startswith("        ") and line.rstrip().endswith(")") and not line.rstrip().endswith("( )"):
            out.append("\n")
    return "".join(out)


def reorder(source: str) -> str:
    """Top-level definitions in reverse order (after the imports), and each class's methods reversed."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)

    def seg(node):
        first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno
        return first - 1, node.end_lineno

    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    head_end = seg(defs[0])[0] if defs else len(lines)
    pieces = []
    for node in reversed(defs):
        lo, hi = seg(node)
        if isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, ast.FunctionDef)]
            if len(methods) > 1:
                m_lo = seg(methods[0])[0]
                body = ["".join(lines[seg(m)[0]:seg(m)[1]]) for m in methods]
                pieces.append("".join(lines[lo:m_lo]) + "\n".join(reversed(body)))
                continue
        pieces.append("".join(lines[lo:hi]))
    return "".join(lines[:head_end]) + "\n\n".join(pieces) + "\n"


def replace(source: str, pairs: list[tuple[str, str]]) -> str:
    for old, new in pairs:
        if old not in source:
            raise SystemExit(f"make_corpus: the disguise expected {old!r} in the source")
        source = source.replace(old, new)
    return source


# -- the corpus ----------------------------------------------------------------------------------------------
def _copy_folder(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    for module in MODULES + ["__init__"]:
        if (src / f"{module}.py").exists():
            shutil.copyfile(src / f"{module}.py", dest / f"{module}.py")


def _read(folder: Path) -> dict[str, str]:
    return {m: (folder / f"{m}.py").read_text() for m in MODULES}


def _write(dest: Path, modules: dict[str, str]) -> None:
    dest.mkdir(parents=True)
    (dest / "__init__.py").write_text("")
    for module, text in modules.items():
        ast.parse(text)  # every planted copy still parses
        (dest / f"{module}.py").write_text(text)


def _without_markers(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if "### BEGIN SOLUTION" not in line
                   and "### END SOLUTION" not in line)


def main(OUT: Path = OUT, manifest_path: Path = HERE / "manifest.json") -> None:  # noqa: N803
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir()
    corpus = REPO / "tests" / "corpus" / "submissions"
    for name in INDEPENDENT_FROM_CORPUS:
        _copy_folder(corpus / name, OUT / name)
    for name in STYLES:
        _copy_folder(HERE / "independent" / name, OUT / name)
    book = {m: _without_markers((REPO / "solutions" / f"{m}.py").read_text()) for m in MODULES}
    _write(OUT / "book", book)

    alt = _read(corpus / "correct_alt_style")
    names = {"scores": "att", "weights": "probs", "context": "ctx", "q": "qq", "k": "kk", "v": "vv", "b": "batch",
             "n": "ntok", "shape": "hshape", "head_dim": "hd", "remainder": "rem", "inputs": "inputs", "x": "x",
             "mask": "msk", "total": "tot", "exps": "e", "future": "upper", "masked": "hidden", "row": "r"}
    _write(OUT / "copy_renamed", {m: respace(recomment(rename(t, names), "part")) for m, t in alt.items()})

    loops = _read(corpus / "correct_loops")
    _write(OUT / "copy_reordered", {m: recomment(reorder(t), "solution for") for m, t in loops.items()})

    verbose = _read(HERE / "independent" / "style_verbose")
    verbose["simple_attention"] = replace(verbose["simple_attention"], [
        ("""    running_total = 0.0
    for value in scores:
        running_total = running_total + value
    return scores / running_total""", """    running_total = sum([value for value in scores])
    return scores / running_total"""),
        ("""    rows = []
    for row_index in range(number_of_tokens):
        rows.append(attention_scores(inputs, inputs[row_index]))
    return torch.stack(rows, dim=0)""", """    rows = [attention_scores(inputs, inputs[row_index]) for row_index in range(number_of_tokens)]
    return torch.stack(rows, dim=0)"""),
        ("""    rows = []
    for row_index in range(number_of_tokens):
        rows.append(context_vector(inputs, attn_weights[row_index]))
    return torch.stack(rows, dim=0)""", """    rows = [context_vector(inputs, attn_weights[row_index]) for row_index in range(number_of_tokens)]
    return torch.stack(rows, dim=0)""")])
    verbose["multihead_attention"] = replace(verbose["multihead_attention"], [
        ("""        list_of_heads = []
        for head_number in range(num_heads):
            list_of_heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
""", """        list_of_heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for head_number in range(num_heads)]
"""),
        ("""        head_outputs = []
        for head in self.heads:
            head_outputs.append(head(x))
""", """        head_outputs = [head(x) for head in self.heads]
""")])
    verbose["trainable_attention"] = replace(verbose["trainable_attention"], [
        ("""    products = []
    for trial in range(num_trials):
        products.append(torch.dot(queries[trial], keys[trial]))
    products = torch.stack(products)""", """    products = torch.stack([torch.dot(queries[trial], keys[trial]) for trial in range(num_trials)])""")])
    vnames = {"number_of_tokens": "num_tok", "result": "out", "token_index": "idx", "running_total": "acc",
              "numerator": "top", "denominator": "bottom", "answer": "res", "rows": "lines", "query_vectors": "qs",
              "key_vectors": "ks", "value_vectors": "vs", "raw_scores": "sc", "weights": "wts", "output": "o",
              "hidden_scores": "msc", "upper_triangle": "up", "kept_weights": "kept"}
    _write(OUT / "copy_comprehension", {m: rename(t, vnames) for m, t in verbose.items()})

    functional = _read(HERE / "independent" / "style_functional")
    functional["trainable_attention"] = replace(functional["trainable_attention"], [
        ("""    return tuple(_param(d_in, d_out) for _ in "qkv")""",
         """    wq = _param(d_in, d_out)
    wk = _param(d_in, d_out)
    wv = _param(d_in, d_out)
    return wq, wk, wv"""),
        ("""    for name in ("W_query", "W_key", "W_value"):
        getattr(sa_v1, name).data = getattr(sa_v2, name).weight.detach().t().clone()""",
         """    sa_v1.W_query.data = sa_v2.W_query.weight.detach().t().clone()
    sa_v1.W_key.data = sa_v2.W_key.weight.detach().t().clone()
    sa_v1.W_value.data = sa_v2.W_value.weight.detach().t().clone()""")])
    functional["multihead_attention"] = replace(functional["multihead_attention"], [
        ("""        outs = [h(x) for h in self.heads]
        return torch.cat(outs, dim=outs[0].dim() - 1)""",
         """        outs = []
        for h in self.heads:
            outs.append(h(x))
        return torch.cat(outs, dim=outs[0].dim() - 1)""")])
    fnames = {"kept": "keep", "allowed": "ok", "scores": "sc", "q": "query", "k": "key", "v": "value", "s": "raw",
              "w": "attn", "n": "T", "outs": "results", "e": "ex", "t": "tensor", "heads": "nh", "d": "width"}
    _write(OUT / "copy_unrolled", {m: respace(rename(t, fnames)) for m, t in functional.items()})

    stable = _read(corpus / "correct_stable_softmax")["multihead_attention"]
    tree = ast.parse(stable)
    mha = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MultiHeadAttention")
    copied = rename(ast.get_source_segment(stable, mha), {
        "b": "B", "num_tokens": "T", "keys": "K", "queries": "Q", "values": "V_", "attn_scores": "S", "attn_weights": "P",
        "context_vec": "out", "d_in": "d_in", "scores": "S", "weights": "P", "context": "out", "T": "T", "q": "qs", "k": "ks", "v": "vs"})
    copied = replace(copied, [("stable_softmax(S, dim=-1)", "torch.softmax(S, dim=-1)")])  # its helper left behind
    own = dict(book)
    own["simple_attention"] = own["simple_attention"].replace("return inputs @ inputs.T", "return torch.matmul(inputs, inputs.T)")
    own["causal_attention"] = own["causal_attention"].replace("    T = attn_weights.shape[-1]", "    size = attn_weights.shape[-1]").replace(
        "torch.ones(T, T, dtype=attn_weights.dtype", "torch.ones(size, size, dtype=attn_weights.dtype")
    text = own["multihead_attention"]
    tree = ast.parse(text)
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MultiHeadAttention")
    lines = text.splitlines(keepends=True)
    own["multihead_attention"] = "".join(lines[: node.lineno - 1]).replace("import torch\n", "import math\nimport torch\n", 1) + copied + "\n" + "".join(lines[node.end_lineno:])
    _write(OUT / "copy_one_step", {m: recomment(t, "my") for m, t in own.items()})

    manifest = {
        "independent": INDEPENDENT_FROM_CORPUS + STYLES + ["book"],
        "planted": [
            {"a": "copy_renamed", "b": "correct_alt_style", "how": "renamed variables, comments and whitespace changed"},
            {"a": "copy_reordered", "b": "correct_loops", "how": "functions and methods reordered, comments changed"},
            {"a": "copy_comprehension", "b": "style_verbose", "how": "loops rewritten as comprehensions, renamed"},
            {"a": "copy_unrolled", "b": "style_functional", "how": "loops unrolled, renamed, whitespace changed"},
            {"a": "copy_one_step", "b": "correct_stable_softmax", "how": "one step copied, the rest its own",
             "steps": ["multihead_attention.MultiHeadAttention"]},
        ],
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(list(OUT.iterdir()))} submissions into {OUT}")


if __name__ == "__main__":
    main()
