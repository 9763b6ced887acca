"""The notebooks' markdown: what each part is about and how the notebook is graded, in the kit's words."""
from __future__ import annotations

from autograder.course.sources import ModuleSource

INTROS = {
    "simple_attention": (
        "Attention lets each token of a sequence build a new vector, its *context vector*, as a weighted "
        "mix of every token's vector. Here the weights come straight from dot products between the input "
        "vectors: no parameter is learned yet. You go from the scores of one query to the context "
        "vectors of all tokens at once, as matrix products."),
    "trainable_attention": (
        "The same mechanism with three learned projections: each token is mapped to a query, a key "
        "and a value. Scores compare queries with keys, are scaled by the square root of the key "
        "dimension so that the softmax does not saturate, and weight the values. You build the "
        "pieces, then two self-attention modules (one with `nn.Parameter`, one with `nn.Linear`), "
        "move weights from one to the other, and measure why the scaling is there."),
    "causal_attention": (
        "A language model predicts the next token, so a token may only look at itself and the tokens "
        "before it. Here you hide the future: first by zeroing weights and renormalizing, then by "
        "setting future scores to minus infinity before the softmax. Dropout on the attention weights "
        "comes last, then a batched `CausalAttention` module combining it all."),
    "multihead_attention": (
        "Several attention heads look at the sequence side by side, each with its own projections. "
        "You first stack `CausalAttention` heads, then write the efficient version that computes all "
        "heads with one set of projections split into heads, and size it like GPT-2 small."),
}

HOW = """\
**How this notebook works**

- Run the cells in order. The first two code cells (setup and the checking helper) are locked: they
  hold the course documents' inputs and the checks.
- Each step has a code cell with a stub: replace `raise NotImplementedError()` with your code. Keep
  the names and signatures; the checks call them.
- The cells under a step check it, one cell per graded count. They run the course documents' own
  cases, and raise an `AssertionError` that says which case failed and what differs (shape, dtype,
  values, a cut gradient, the likely mistake). When your notebook is graded, the same cells also run
  hidden cases: other shapes, batch sizes, dtypes and seeds.
- A check cell gets its points when it runs without an error. Do not print to stderr, and do not
  redefine the checking functions or the setup names."""


def notebook_intro(unit_title: str, module: str, source: ModuleSource, points: float, steps: int) -> str:
    title = source.docstring.splitlines()[0].rstrip(".") if source.docstring else module
    intro = INTROS.get(module, source.docstring)
    return (f"# {title}\n\n*{unit_title}*\n\n{intro}\n\nThis notebook has {steps} steps worth "
            f"{points:g} points.\n\n{HOW}")


def borrowed_intro(module: str, names: list[str]) -> str:
    listed = ", ".join(f"`{n}`" for n in names)
    return (f"## Carried over from `{module}`\n\nThis part builds on {listed}. Paste your version from "
            f"the `{module}` notebook into the next cell: it is not graded here, but the steps below use it.")


def step_intro(number: int, title: str, name: str, docstring: str, counts: dict[str, tuple[float, str]]) -> str:
    """``counts``: count -> (points, visibility)."""
    total = sum(p for p, _ in counts.values())
    graded = ", ".join(f"{c} {p:g}" + (" (hidden)" if v != "public" else "") for c, (p, v) in counts.items())
    body = docstring.strip()
    quoted = "\n".join(f"> {line}" if line else ">" for line in body.splitlines())
    return (f"## Step {number}: {title}\n\nWrite `{name}`. {total:g} points: {graded}.\n\n{quoted}")
