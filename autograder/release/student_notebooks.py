"""The bundle's notebooks: one per module, from the course's own prose and the stubs of ``exercises/``.

Each notebook loads the ``%grade`` magic in its first cell, then holds the libraries and the course
documents' inputs, then, step by step, the step's words (``autograder/unit/prose.py``, as in the nbgrader
course), its stub, and a ``%grade check module.step`` cell. A module that builds on a step of another
(the wrapper's ``CausalAttention``) has that stub carried over, as the nbgrader notebooks do; the intake
grades the step in its own module. No hidden case and no solution line is in them (the release's leak
scan reads their cells).
"""
from __future__ import annotations

from pathlib import Path

from autograder.nbgrader_course.notebook_format import nbformat
from nbformat import v4

from autograder.nbgrader_course import literals
from autograder.course.sources import read_module, with_borrowed
from autograder.unit import documents, prose

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}

HOW = """\
**How this notebook works**

- Run the cells in order. The first code cell loads `%grade check`; the next holds the libraries and the
  course documents' inputs.
- Each step has a code cell with a stub: replace `raise NotImplementedError(...)` with your code, keeping
  the names and signatures.
- The `%grade check` cell under a step checks it against the course documents' own cases, from the cells
  you have run (not from the saved file), in a process of its own: nothing in this kernel can change the
  verdict. It says what differs and the likely mistake. Passing is a good sign, not the grade: hidden
  cases (other shapes, seeds and dtypes) are graded later.
- `%grade check` alone checks every step this notebook defines; `%grade check --html` also writes the
  feedback page with pictures. From a terminal, `grade check notebooks/` checks the saved notebooks."""


def setup_source(imports: list[str]) -> str:
    lines = ["# The libraries, and the inputs of the course documents (try your code on them).", *imports]
    for name, (factory, seed, where) in documents.INPUTS.items():
        lines += ["", f"# {where}; its trainable weights are drawn after torch.manual_seed({seed})",
                  f"{name}_inputs = torch.tensor({literals.nested(factory())})"]
    return "\n".join(lines)


def module_notebook(title: str, module: str, exercises: Path, steps: dict) -> nbformat.NotebookNode:
    """``steps``: the public cases' steps (``public_cases.json``), for each step's title and counts."""
    source = read_module(exercises / f"{module}.py")
    imports, borrowed = with_borrowed(source, exercises)

    heading = source.docstring.splitlines()[0].rstrip(".") if source.docstring else module
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    cells = [v4.new_markdown_cell(f"# {heading}\n\n*{title}*\n\n{prose.INTROS.get(module, source.docstring)}\n\n{HOW}"),
             v4.new_code_cell("%load_ext autograder"),
             v4.new_code_cell(setup_source(imports))]
    for other, (taken, pieces) in borrowed.items():
        cells += [v4.new_markdown_cell(prose.borrowed_intro(other, taken)),
                  v4.new_code_cell("\n\n\n".join(pieces))]
    number = 0
    for name, piece in source.pieces.items():
        step = f"{module}.{name}"
        if step not in steps:
            cells.append(v4.new_code_cell(piece))
            continue
        number += 1
        spec = steps[step]
        counts = {c: (cs["points"], cs["visibility"]) for c, cs in spec["counts"].items()}
        cells += [v4.new_markdown_cell(prose.step_intro(number, spec["title"], name, source.docstrings[name], counts)),
                  v4.new_code_cell(piece),
                  v4.new_code_cell(f"%grade check {step}")]
    for i, cell in enumerate(cells):  # stable ids: the zip stays byte-for-byte reproducible
        cell["id"] = f"{module[:40]}-{i}"
    nb.cells = cells
    return nb


def write_notebooks(title: str, modules: list[str], exercises: Path, steps: dict, dest: Path) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for module in modules:
        path = dest / f"{module}.ipynb"
        nbformat.write(module_notebook(title, module, exercises, steps), path)
        written.append(path)
    return written
