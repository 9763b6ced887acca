"""What graded code may import: one environment, wherever it is graded or checked.

The student bundle (``grade release``: its pinned requirements) and the Gradescope image (``setup.sh``: the kit's
runtime dependencies) install different packages, and the machine that runs ``grade autograde`` has the kit's test
extras besides (matplotlib, nbgrader, jupyter, dask...), all in one site-packages. A submission that imported
matplotlib got 81/81 from ``grade autograde`` in the kit's venv and 33/54 from the bundle's ``grade check``. So a
worker imports, besides Python's standard library and the submission's own modules, only the packages installed
everywhere code is graded: the distributions both the bundle and the Gradescope image install (``MODULES``, their
top-level import names; tests/system/test_one_environment.py derives them from the pins and fails, with the list to
paste, when they drift). Anything else is refused with one line, the same in ``grade check``, ``grade autograde``,
Gradescope and Dask, whether or not the machine has it (``refused``).

The hook sits first on ``sys.meta_path`` of each worker, installed before the submission is imported
(``child.serve``). It is the worker's: a submission can remove it, and then imports what that machine has, as before;
it is a rule of the course, not a wall (the sandbox's walls are in ``confine.py``).
"""
from __future__ import annotations

import sys

#: the top-level modules of the distributions both the student bundle and the Gradescope image install
#: (tests/system/test_one_environment.py keeps this in step with release/pins.py)
MODULES = frozenset({
    "IPython", "PIL", "_distutils_hack", "anyio", "asttokens", "click", "executing", "filelock", "fsspec",
    "functorch", "idna", "ipython_pygments_lexers", "isympy", "jedi", "jinja2", "jupyter", "jupyter_core",
    "markdown_it", "markupsafe", "matplotlib_inline", "mdurl", "mpmath", "networkx", "numpy", "packaging", "parso",
    "pexpect", "platformdirs", "prompt_toolkit", "psutil", "ptyprocess", "pure_eval", "pygments", "rich",
    "safetensors", "setuptools", "stack_data", "sympy", "torch", "torchgen", "traitlets", "typing_extensions",
    "watchfiles", "wcwidth",
})
#: what a sentence names of them: what the exercises use
NAMED = ("torch", "numpy")
#: the package the submission is imported as (``submission.py``)
PACKAGE = "submission"


def refused(name: str) -> str:
    """The one line a student reads for an import of ``name`` that graded code may not make (under the 200
    characters a hidden count shows of a message, for a name of up to 50)."""
    return (f"No module named '{name}' where your code is graded: it may import only Python's standard library, "
            f"{', '.join(NAMED)} and your own modules; remove the import")


def allowed(name: str) -> bool:
    top = name.partition(".")[0]
    return (top in MODULES or top == PACKAGE or top in sys.stdlib_module_names or top in sys.builtin_module_names
            or top == "__main__")


class OnlyTheCoursePackages:
    """A meta path finder that refuses the top-level imports graded code may not make (``allowed``), installed or
    not; every other import goes on to the usual finders."""

    def find_spec(self, name, path=None, target=None):
        if path is not None or allowed(name):  # a submodule (its package was allowed) or an allowed module
            return None
        raise ModuleNotFoundError(refused(name), name=name)

    def invalidate_caches(self) -> None:
        pass


def install() -> None:
    """First on ``sys.meta_path``, once."""
    if not any(isinstance(f, OnlyTheCoursePackages) for f in sys.meta_path):
        sys.meta_path.insert(0, OnlyTheCoursePackages())
