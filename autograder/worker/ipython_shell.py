"""``get_ipython()`` in the sandbox: the shell a notebook's code calls, each magic with one defined meaning.

A kernel runs each cell through IPython's transformer, and so does the intake (``intake/ipython_cells.py``): a
notebook's module, and a ``.py`` that nbconvert exported from one, call ``get_ipython().run_line_magic(...)``,
``.run_cell_magic(...)``, ``.system(...)`` and ``.getoutput(...)``. Here, in the student's process, those calls mean:

- ``%time``, ``%timeit``, ``%prun`` (and the cell magics ``%%time``, ``%%timeit``, ``%%capture``, ``%%prun`` an
  exported ``.py`` calls): the code runs, once, in the caller's namespace (an expression's value is returned, as
  ``%time`` returns it); an error is the code's own, on the caller's line;
- ``%%writefile``: nothing here: staging wrote the file into the submission's folder, which is read-only here;
- ``!cmd``, ``%pip``, ``%conda``, ``%%bash`` and every other shell: not run (staging said so to the student);
  ``files = !ls`` gets an empty list;
- every other magic (``%matplotlib``, ``%config``, ``%load_ext``, ``%autoreload``, ``?`` help, ``%grade`` ...):
  nothing; they change what the kernel shows or loads, not the notebook's code.

``input()`` answers an empty line (no one types while grading), ``display(...)`` shows nothing, and the shell's
text names no front end (``'google.colab' in str(get_ipython())`` is False, as on a laptop). ``install`` puts
``get_ipython``, ``display`` and ``input`` among the builtins, where IPython itself puts them, before any of the
student's code runs. It imports nothing outside this folder. tests/unit/test_ipython_cells.py shows each meaning.
"""
from __future__ import annotations

import ast
import builtins
import sys

#: magics whose code runs (once), in the caller's namespace
RUNS = {"time", "timeit", "prun", "capture"}


class NoOutput(list):
    """What ``files = !ls`` gets: the command is not run, so its output is empty (IPython's ``SList``, empty)."""

    s = n = ""
    l = p = ()  # noqa: E741 - IPython's own names for the lines and the paths

    def grep(self, *args, **kwargs) -> "NoOutput":
        return NoOutput()

    def fields(self, *args) -> "NoOutput":
        return NoOutput()


def _run(code: str, frame, mode: str):
    """``code`` compiled as if written on the caller's line (its errors point there), run in the caller's
    namespace; an expression's value is returned."""
    tree = compile(code, frame.f_code.co_filename, mode, 0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
    for node in ast.walk(tree):
        if "lineno" in node._attributes:
            node.lineno = node.end_lineno = frame.f_lineno
    compiled = compile(tree, frame.f_code.co_filename, mode, dont_inherit=True)
    return eval(compiled, frame.f_globals, frame.f_locals)  # noqa: S307 - the student's own code, in their sandbox


def _run_source(code: str, frame):
    try:
        return _run(code, frame, "eval")
    except SyntaxError:
        return _run(code, frame, "exec")


class GradingShell:
    """The one shell of a worker (``get_ipython()`` returns it)."""

    def __repr__(self) -> str:
        return "<the grader's shell>"

    __str__ = __repr__

    def run_line_magic(self, name: str, line: str = "", _stack_depth: int = 1):
        if name in RUNS and line.strip():
            return _run_source(_statement(line), sys._getframe(1))
        return None

    def run_cell_magic(self, name: str, line: str = "", cell: str = ""):
        if name in RUNS and cell.strip():
            _run(cell, sys._getframe(1), "exec")
        return None

    def system(self, command: str = "") -> None:
        return None

    def getoutput(self, command: str = "", split: bool = True, depth: int = 0) -> NoOutput:
        return NoOutput()

    def magic(self, line: str = ""):
        name, _, rest = line.lstrip("%").partition(" ")
        return self.run_line_magic(name, rest) if name in RUNS else None


def _statement(line: str) -> str:
    """The statement of a ``%timeit``/``%time`` line, its options left out (``%timeit -n 10 f(x)``)."""
    rest = line.strip()
    while rest.startswith("-"):
        option, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        if option in ("-n", "-r", "-p", "-l", "-T", "-D", "-s"):  # an option with a value
            rest = rest.partition(" ")[2].lstrip()
    return rest


SHELL = GradingShell()


def get_ipython() -> GradingShell:
    return SHELL


def display(*objects, **options) -> None:
    """Shows nothing: grading has no front end."""
    return None


def answer_input(prompt: object = "") -> str:
    """``input()`` while grading: the prompt is printed, as ``input`` prints it, and the answer is an empty line."""
    try:
        sys.stdout.write(str(prompt))
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a prompt that cannot be printed changes nothing of the answer
        pass
    return ""


def install() -> None:
    """``get_ipython``, ``display`` and ``input`` among the builtins, before any of the student's code runs."""
    builtins.get_ipython = get_ipython
    builtins.display = display
    builtins.input = answer_input
