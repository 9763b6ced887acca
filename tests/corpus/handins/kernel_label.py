"""The independent label of a hand-in: what a real kernel makes of it, step by step, apart from the kit.

Each notebook runs top to bottom in a fresh IPython kernel (nbclient, ``allow_errors``: past a failing cell, as
nbgrader runs a notebook), in a copy of the hand-in's folder (so ``%%writefile`` writes beside it, as on the
student's machine); a ``.py`` folder is imported in a kernel too (``get_ipython()`` exists there, as for a file
exported from a notebook), with the folder first on ``sys.path``, as ``python`` run in the student's folder has it.
Then each step is compared with the reference by ``tests/corpus/label.py`` (its own inputs and comparisons, none of
the kit's), the earlier steps standing in as the reference's; a module that does not import loses its own steps, and
the modules importing it import the reference's in its place. Where a module is handed in both as a ``.py`` file and
as a notebook, the form with fewer wrong steps is the student's work.

The kit's own ``%load_ext autograder`` and ``%grade`` lines are left out of the kernel's run (they print a check and
define nothing), and ``pip`` and ``nvidia-smi`` are harmless stand-ins on the kernel's ``PATH`` (a ``!pip install``
under ``if IN_COLAB:`` never runs on a laptop; an unguarded one must not reach the network from a test).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]
KIT_LINES = ("%load_ext autograder", "%grade")
MARK = "KERNEL-LABEL:"


def _label_module():
    spec = importlib.util.spec_from_file_location("corpus_label", ROOT / "tests" / "corpus" / "label.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("corpus_label", module)
    spec.loader.exec_module(module)
    return module


# -- what runs inside the kernel ----------------------------------------------------------------------
class _Namespace:
    """A kernel's globals as a module: reading and rebinding go to the very dict its functions see."""

    def __init__(self, names: dict):
        object.__setattr__(self, "__dict__", names)


def notebook_steps(names: dict, module: str) -> list[str]:
    """In the kernel, once the notebook of ``module`` ran: its steps that differ from the reference's."""
    label = _label_module()
    order = label.steps_in_order()
    reference = label.load(ROOT / "solutions")
    own_steps = [s for s in order if s.startswith(module + ".")]
    own_names = {s.split(".", 1)[1] for s in own_steps}
    owns = {s: names.get(s.split(".", 1)[1]) for s in own_steps}
    view = _Namespace(names)
    mine = {m: view for m in MODULES}
    differ = []
    for step in own_steps:
        for earlier in order[: order.index(step)]:  # the earlier steps stand in as the reference's
            other, name = earlier.split(".", 1)
            if other != module and name in own_names:
                continue  # a step of another module named like one of this module's (context_vector)
            original = owns[earlier] if other == module else names.get(name)
            if original is None:
                continue
            correct = getattr(reference[other], name)
            for key, value in list(names.items()):
                if value is original:
                    names[key] = correct
        own = owns[step]
        if own is None or label.compare(mine, reference, step, own):
            differ.append(step)
    return differ


def folder_steps(folder: str) -> dict:
    """In the kernel, in the hand-in's folder: each .py module imported as ``python`` in that folder imports it (a
    package of the folder's modules, the folder first on ``sys.path``), afresh for each step; its steps that differ
    from the reference's, and the modules that did not import."""
    label = _label_module()
    order = label.steps_in_order()
    reference = label.load(ROOT / "solutions")
    folder_path = Path(folder)
    here = [m for m in MODULES if (folder_path / f"{m}.py").is_file()]
    differ, failed = [], set()
    for count, step in enumerate(order):
        mine = _import(folder_path, here, reference, count, failed)
        module, short = step.split(".", 1)
        own = getattr(mine.get(module), short, None)
        if module in failed or own is None:
            differ.append(step)
            continue
        label._substitute(mine, reference, order[: order.index(step)])
        if label.compare(mine, reference, step, own):
            differ.append(step)
    return {"differ": differ, "failed": sorted(failed)}


def _import(folder: Path, modules: list[str], reference: dict, count: int, failed: set) -> dict:
    package = f"handin_{count}"
    for name in [n for n in sys.modules if n.split(".")[0] in {p.stem for p in folder.glob("*.py")}]:
        del sys.modules[name]  # the folder's files as top-level modules: afresh, as a new `python` would
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_loader(package, loader=None, is_package=True)
    root = importlib.util.module_from_spec(spec)
    root.__path__ = [str(folder)]
    sys.modules[package] = root
    mine = {}
    for module in modules:  # in the unit's order: one that does not import gives its importers the reference's
        try:
            mine[module] = importlib.import_module(f"{package}.{module}")
        except Exception:  # noqa: BLE001 - the module does not import: its steps lose
            failed.add(module)
            sys.modules[f"{package}.{module}"] = sys.modules[module] = mine[module] = reference[module]
    return mine


# -- what the test runs -------------------------------------------------------------------------------
def _tools(folder: Path) -> Path:
    """Harmless ``pip`` and ``nvidia-smi`` for the kernel's PATH."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir(exist_ok=True)
    for tool, words in (("pip", "Requirement already satisfied"), ("nvidia-smi", "NVIDIA-SMI has failed: no GPU")):
        path = bin_dir / tool
        path.write_text(f"#!/bin/sh\necho '{words}'\n")
        path.chmod(0o755)
    return bin_dir


def _run(cells: list[str], cwd: Path, timeout: float = 300):
    """Run ``cells`` (code) in a fresh kernel in ``cwd``, past errors; the executed notebook."""
    import nbformat  # noqa: PLC0415 - Jupyter's, from the test extra
    from tests.support.kernels import notebook_client  # noqa: PLC0415 - Jupyter's, from the test extra

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{_tools(cwd)}{os.pathsep}{path}"
    try:
        notebook_client(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                        resources={"metadata": {"path": str(cwd)}}).execute()
    finally:
        os.environ["PATH"] = path
    return nb


def _said(cell) -> dict:
    for out in cell.outputs:
        text = out.get("text", "")
        if MARK in text:
            return json.loads(text.split(MARK, 1)[1].strip().splitlines()[0])
        if out.get("output_type") == "error":
            raise RuntimeError(f"the label cell failed: {out.get('ename')}: {out.get('evalue')}")
    raise RuntimeError("the label cell said nothing")


def label_notebook(path: Path, module: str, workdir: Path) -> dict:
    """``{"differ": [steps], "errors": [cell numbers, 1-based, that raised in the kernel]}`` of ``path``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    cells, numbers = [], []
    for number, cell in enumerate(data["cells"], start=1):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        kit = source.strip().startswith(KIT_LINES)
        cells.append("pass" if kit else source)
        numbers.append(number)
    cells.append(f"import json as _json, sys as _sys\n_sys.path.insert(0, {str(ROOT / 'tests' / 'corpus' / 'handins')!r})\n"
                 f"import kernel_label as _kernel_label\n"
                 f"print({MARK!r} + _json.dumps(_kernel_label.notebook_steps(globals(), {module!r})))")
    nb = _run(cells, workdir)
    errors = [numbers[i] for i, cell in enumerate(nb.cells[:-1]) if any(o.get("output_type") == "error" for o in cell.outputs)]
    return {"differ": _said(nb.cells[-1]), "errors": errors}


#: the first cell of a .py folder's kernel: the kit's own lines of an exported notebook (``%load_ext autograder``,
#: ``%grade check``) print a check and define nothing: skipped, as in a notebook's run
SKIP_KIT_LINES = """
_shell = get_ipython()
_magic = _shell.run_line_magic
def _without_kit_lines(name, line, _stack_depth=1):
    if name == "grade" or (name == "load_ext" and line.strip() == "autograder"):
        return None
    return _magic(name, line, _stack_depth=_stack_depth + 1)
_shell.run_line_magic = _without_kit_lines
"""


def label_folder(folder: Path) -> dict:
    cells = [SKIP_KIT_LINES, f"import json as _json, sys as _sys\n_sys.path.insert(0, {str(ROOT / 'tests' / 'corpus' / 'handins')!r})\n"
             f"import kernel_label as _kernel_label\n"
             f"print({MARK!r} + _json.dumps(_kernel_label.folder_steps({str(folder)!r})))"]
    nb = _run(cells, folder)
    for out in nb.cells[0].outputs:
        if out.get("output_type") == "error":
            raise RuntimeError(f"the kernel's first cell failed: {out.get('evalue')}")
    return _said(nb.cells[-1])


def _code_key(path: Path) -> tuple:
    data = json.loads(path.read_text(encoding="utf-8"))
    return tuple("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                 for c in data["cells"] if c["cell_type"] == "code")


def _files_key(handin: Path) -> tuple:
    return tuple(sorted((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in handin.iterdir()
                        if p.is_file() and p.suffix != ".ipynb"))


def tasks(handin: Path) -> dict[tuple, tuple]:
    """What a kernel must run to label ``handin``: key -> (kind, path, module); a key is the same for the same code
    in the same surroundings, so a notebook shared by several hand-ins runs once."""
    found = {}
    files = _files_key(handin)
    for module in MODULES:
        notebook = handin / f"{module}.ipynb"
        if notebook.is_file():
            found[("notebook", module, _code_key(notebook), files)] = ("notebook", notebook, module)
    if any((handin / f"{m}.py").is_file() for m in MODULES):
        found[("folder", files)] = ("folder", handin, None)
    return found


def run_task(task: tuple) -> dict:
    kind, path, module = task
    with tempfile.TemporaryDirectory(prefix="kernel-label-") as temp:
        work = Path(temp) / "handin"
        shutil.copytree(path.parent if kind == "notebook" else path, work, ignore=shutil.ignore_patterns("*.ipynb"))
        return label_notebook(path, module, work) if kind == "notebook" else label_folder(work)


def label_all(handins: dict[str, Path], workers: int = 2) -> dict[str, dict]:
    """The label of each hand-in (name -> folder): ``{"differ": [steps], "errors": {notebook: [cells]},
    "graded_from": {module: file}}``: the steps that differ from the reference's in a kernel's run, each module from
    the form with fewer wrong steps. Each distinct notebook or folder runs once, ``workers`` kernels at a time."""
    import concurrent.futures  # noqa: PLC0415 - only here
    import multiprocessing  # noqa: PLC0415 - only here

    per_handin = {name: tasks(folder) for name, folder in handins.items()}
    unique = {key: task for found in per_handin.values() for key, task in found.items()}
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        done = dict(zip(unique, pool.map(run_task, unique.values())))
    order = _label_module().steps_in_order()
    labels = {}
    for name, found in per_handin.items():
        by_form: dict[str, dict[str, list[str]]] = {}
        errors = {}
        for key, (kind, path, module) in found.items():
            if kind == "notebook":
                by_form.setdefault(module, {})[path.name] = done[key]["differ"]
                errors[path.name] = done[key]["errors"]
            else:
                for other in MODULES:
                    if (path / f"{other}.py").is_file():
                        by_form.setdefault(other, {})[f"{other}.py"] = [s for s in done[key]["differ"]
                                                                       if s.startswith(other + ".")]
        differ, graded_from = [], {}
        for module in MODULES:
            forms = by_form.get(module)
            if not forms:
                differ += [s for s in order if s.startswith(module + ".")]
                continue
            file, steps = min(forms.items(), key=lambda kv: (len(kv[1]), not kv[0].endswith(".py")))
            graded_from[module] = file
            differ += steps
        labels[name] = {"differ": [s for s in order if s in differ], "errors": errors, "graded_from": graded_from}
    return labels


# -- the labels as recorded -------------------------------------------------------------------------------
#: the labels of make_handins.write's corpus, as the kernels gave them, with what they were made from and the versions
RECORDED = Path(__file__).with_name("labels.json")
#: what a kernel's verdict could change with besides the hand-ins themselves
VERSIONS = ("torch", "ipykernel", "ipython", "nbclient")


def made_from(handins: dict[str, Path]) -> str:
    """What the labels were made from in this checkout: every file of every hand-in, the label's own code and what it
    compares with (the reference solutions, the steps of course.yml). A change to any of them needs the labels
    recorded again (tests/unit/test_handin_labels.py says so, in seconds)."""
    digest = hashlib.sha256()
    for name in sorted(handins):
        for path in sorted(p for p in handins[name].rglob("*") if p.is_file()):
            digest.update(f"{name}/{path.relative_to(handins[name])}\0".encode() + path.read_bytes() + b"\0")
    compared = [ROOT / "course.yml", *sorted((ROOT / "solutions").glob("*.py"))]
    for own in (Path(__file__), ROOT / "tests" / "corpus" / "label.py", *compared):
        digest.update(f"{own.relative_to(ROOT)}\0".encode() + own.read_bytes() + b"\0")
    return digest.hexdigest()


def versions() -> list:
    """Python's version and those of ``VERSIONS`` here (a package of them missing is a version too): another
    machine's install may differ, and then its run labels every hand-in in kernels again."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - only here

    try:
        found = [version(p) for p in VERSIONS]
    except PackageNotFoundError as missing:
        found = [f"missing: {missing}"]
    return [list(sys.version_info[:2]), found]


def recorded(handins: dict[str, Path]) -> dict[str, dict] | None:
    """The recorded labels, when they were made from these very hand-ins, code and versions; else None."""
    if not RECORDED.is_file():
        return None
    kept = json.loads(RECORDED.read_text())
    fresh = kept.get("made_from") == made_from(handins) and kept.get("versions") == versions()
    return kept["labels"] if fresh else None


def record(dest: Path) -> dict[str, dict]:
    """Write make_handins' corpus under ``dest``, label it in kernels and record the labels (``RECORDED``)."""
    import make_handins  # noqa: PLC0415 - beside this file

    folders = make_handins.write(dest)
    labels = label_all(folders)
    kept = {"made_from": made_from(folders), "versions": versions(), "labels": labels}
    RECORDED.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    return labels


if __name__ == "__main__":
    # python tests/corpus/handins/kernel_label.py          label make_handins' corpus again and record it
    # python tests/corpus/handins/kernel_label.py DIR...   label these hand-ins and print the labels
    if sys.argv[1:]:
        for name, found in label_all({Path(p).name: Path(p).resolve() for p in sys.argv[1:]}).items():
            print(name, json.dumps(found))
    else:
        sys.path.insert(0, str(Path(__file__).parent))
        with tempfile.TemporaryDirectory(prefix="handins-") as temp:
            record(Path(temp) / "handins")
        print(f"recorded: {RECORDED.relative_to(ROOT)}")
