"""Build the nbgrader source notebook of one module of the course."""
from __future__ import annotations

from pathlib import Path

from .notebook_format import nbformat
from nbformat import v4

from autograder.course.sources import ModuleSource, read_module, with_borrowed
from autograder.unit import documents
from autograder.unit import prose

from . import graded_cells, helper, literals, nbgrader_cells
from .collect import Case

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def setup_source(imports: list[str]) -> str:
    lines = ["# Setup (locked): the libraries, and the inputs of the course documents.",
             "import warnings", "",
             "warnings.filterwarnings(\"ignore\")  # a warning printed on stderr would cost a graded cell its points",
             ""]
    lines += imports
    for name, (factory, seed, where) in documents.INPUTS.items():
        lines += ["", f"# {where}; its trainable weights are drawn after torch.manual_seed({seed})",
                  f"{name}_inputs = torch.tensor({literals.nested(factory())})"]
    lines += ["", f"QUERY_INDEX = {documents.QUERY_INDEX}  # the documents' query token: the second input, x(2)",
              f"D_OUT = {documents.D_OUT}  # the documents' output dimension for trainable weights",
              f"SEED_V2 = {documents.SEED_V2}  # the seed of the documents' SelfAttention_v2"]
    return "\n".join(lines)


def helper_source(course, steps: list[str], data_file: str | None = None) -> str:
    """``checking_helper.py``, beside the notebooks: the feedback package and the runner (``helper.py``), the
    tolerances of ``steps``, and the name of the data file beside the notebooks."""
    tolerances = {}
    for step in steps:
        t = course.tolerances(step)
        tolerances[step] = ((t.float32.rtol, t.float32.atol), (t.float64.rtol, t.float64.atol))
    return helper.module_source(tolerances, data_file)


def build_notebook(course, module: str, solutions: Path, cases: dict[tuple[str, str], list[Case]],
                   data: literals.DataFile | None = None) -> nbformat.NotebookNode:
    """The notebook of ``module``; the long tensors of its cases in the open go into ``data``. Its checking
    helper cell imports ``checking_helper.py`` (``helper_source``), which the course writes beside it."""
    source: ModuleSource = read_module(solutions / f"{module}.py")
    steps = [s for s in course.steps if s.split(".", 1)[0] == module]
    names = {s.split(".", 1)[1]: s for s in steps}
    missing = [s for s in steps if s.split(".", 1)[1] not in source.pieces]
    if missing:
        raise LookupError(f"{solutions / (module + '.py')} defines no {', '.join(m.split('.', 1)[1] for m in missing)}")
    points = sum(c.points for s in steps for c in course.steps[s].counts.values())

    imports, borrowed = with_borrowed(source, solutions)

    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells.append(nbgrader_cells.markdown(prose.notebook_intro(course.title, module, source, points, len(steps)),
                                            "intro"))
    nb.cells.append(nbgrader_cells.read_only(setup_source(imports), "setup"))
    nb.cells.append(nbgrader_cells.read_only(helper.import_cell(), "checking_helper"))
    for other, (taken, pieces) in borrowed.items():
        nb.cells.append(nbgrader_cells.markdown(prose.borrowed_intro(other, taken), f"from_{other}"))
        nb.cells.append(nbgrader_cells.solution("\n\n\n".join(pieces), f"from_{other}_code"))

    number = 0
    for name, piece in source.pieces.items():
        step = names.get(name)
        if step is None:  # not graded on its own: the student still writes it
            nb.cells.append(nbgrader_cells.solution(piece, name))
            continue
        number += 1
        spec = course.steps[step]
        counts = {c: (cs.points, cs.visibility) for c, cs in spec.counts.items()}
        intro = prose.step_intro(number, spec.title, name, source.docstrings[name], counts)
        nb.cells.append(nbgrader_cells.markdown(intro, f"about_{name}"))
        nb.cells.append(nbgrader_cells.solution(piece, name))
        for count, cspec in spec.counts.items():
            code = graded_cells.count_cell(step, count, cspec.points, cases[(step, count)], data)
            nb.cells.append(nbgrader_cells.test(code, f"test_{name}_{count}", cspec.points))
    return nb
