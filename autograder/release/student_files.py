"""The bundle's own text files: README, requirements.txt and pyproject.toml for the student package."""
from __future__ import annotations

from .pins import TORCH_CPU_INDEX

#: what the student package imports: grade check draws a failing case with rich, and its --html page's
#: pictures with Pillow; --watch sees saves with watchfiles; the notebooks' %grade magic runs in an IPython
#: kernel (ipykernel: VS Code and any Jupyter front end run the notebooks with it); tests/system/test_release.py checks
#: this list against the bundle's own imports
STUDENT_ROOTS = ["torch", "numpy", "click", "safetensors", "rich", "pillow", "watchfiles", "ipython", "ipykernel"]


def pyproject(version: str, pins: dict[str, str], packages: list[str], python: str) -> str:
    deps = "\n".join(f'    "{name}=={pins[name]}",' for name in STUDENT_ROOTS)
    package_list = ", ".join(f'"{p}"' for p in packages)
    return f'''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "attention-exercises"
version = "{version}"
description = "Exercises on attention mechanisms, with grade check (public checks only)"
# the Pythons every pinned requirement installs on (their own Requires-Python): pip refuses the package on
# another, rather than leave a `grade` without its dependencies
requires-python = "{python}"
dependencies = [
    # The CPU build of torch: install_torch.py installs it from {TORCH_CPU_INDEX} first
{deps}
]

[project.scripts]
grade = "autograder.cli:command_line"

[tool.setuptools]
packages = [{package_list}]

[tool.setuptools.package-data]
"autograder.check" = ["public_cases.json", "public_cases.safetensors"]
'''


def python_words(python: str) -> str:
    """``>=3.11,<3.12`` -> ``Python 3.11``."""
    return f"Python {_lowest(python)}" + (" or newer" if "<" not in python else f" ({python})")


def _lowest(python: str) -> str:
    return python.split(",")[0].lstrip(">=")


def readme(title: str, modules: list[str], steps: int, public_points: float, python: str) -> str:
    files = ", ".join(f"`{m}.py`" for m in modules)
    notebooks = ", ".join(f"`{m}.ipynb`" for m in modules)
    words, low = python_words(python), _lowest(python)
    return f"""# {title}

Your exercises are in `exercises/` ({files}). Each function or class raises
`NotImplementedError` until you write it; its docstring says what it computes, the shapes, and a hint.

## Install (once)

With {words} (what these pinned requirements install on: `requires-python = "{python}"`; with an
older one, `pip install` stops and says so), on Linux, macOS or Windows, from this folder:

```
python3 -m venv .venv                # python3 --version: {words}; else name one (python{low}, py -{low})
source .venv/bin/activate            # Windows: .venv\\Scripts\\activate
python install_torch.py              # torch 2.13.0, the CPU build; it says which build it installed
pip install -r requirements.txt      # the exact versions the checks were made with
pip install --no-deps .              # the `grade` command
```

## Check your work

```
grade check                                   # checks ./exercises
grade check path/to/folder                    # another folder holding the same files
grade check --step causal_attention           # one module, or one step: --step causal_attention.CausalAttention
grade check --json                            # the same, as JSON
```

`grade check` runs the public checks ({steps} steps, {public_points:g} points): the inputs of the course
documents, with their expected outputs. It prints one row per step (passed, FAILED or not attempted)
and, under the table, what went wrong for each failure: which case, what was expected and what came
back, and the likely mistake when it can tell. It exits non-zero while anything fails.

Passing every public check is a good sign, not the grade: your submission is also graded on hidden
cases (other shapes, seeds and dtypes), so do not hard-code the expected outputs.

## Or work in notebooks

`notebooks/` holds the same stubs as one notebook per module ({notebooks}), with the course's words for
each step. Open them in VS Code, or in JupyterLab (`pip install jupyterlab`, then `jupyter lab notebooks/`).
The first code cell loads the checks (`%load_ext autograder`); the `%grade check` cell under each step
checks the cells you have run, in a process of its own, with the same words as `grade check`.
`%grade check --html` also writes the feedback page. From a terminal, `grade check notebooks/` checks the
saved notebooks, and `grade check --watch` checks again each time you save.

## Submit

Upload the files of `exercises/` ({files}) as they are, without renaming them; or, if you worked in
notebooks, the notebooks of `notebooks/` ({notebooks}). Hand in one form, not both.
"""
