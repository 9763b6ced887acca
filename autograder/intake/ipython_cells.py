"""A notebook's code cell as the Python a kernel runs for it, line for line, and what grading does not run.

A kernel runs each cell through IPython's own transformer (``IPython.core.inputtransformer2.TransformerManager``),
so IPython's syntax keeps its meaning: ``!pip install torch`` indented under ``if IN_COLAB:`` becomes
``get_ipython().system('pip install torch')`` under that ``if``, ``files = !ls`` an assignment, ``torch.softmax?``
a call of the ``pinfo`` magic, ``%matplotlib inline`` a call of its magic. The intake runs the same transformer, so
a notebook's module has the kernel's code; the sandbox's shell (``worker/ipython_shell.py``) gives each call its
meaning when the module runs. Every line of a cell stays on its line, so a line of the staged module is a line of
the cell (``staged_cells.py`` names it).

Cell magics are settled here, where the cell's text is:

- ``%%time``, ``%%timeit``, ``%%capture``, ``%%prun``: the body runs, as Python (the magic's line becomes a comment);
- ``%%writefile [-a] NAME``: the body is a file the student's code may import; staging writes it into the staged
  folder (``written``), where the kernel wrote it, beside the notebook;
- ``%%bash``, ``%%sh``, ``%%script`` and the other shells: not run, and said (``not_run``);
- ``%%html``, ``%%markdown`` and the other displays, and any other cell magic: not run (a display has no effect on
  the code; an unknown magic is said).

A shell line (``!cmd``, ``%pip``, ``%conda``, ``%sx``, ``!!``) is not run either (the sandbox's shell answers it with
nothing, and an empty list for ``files = !ls``): each is said once to the student (``not_run``).

Without IPython (an install without it), IPython's lines are commented out instead, as before the transformer.
tests/unit/test_ipython_cells.py shows each construct.
"""
from __future__ import annotations

import ast
import functools
import re
import shlex
from dataclasses import dataclass, field

#: the comment a line of IPython syntax that is not run becomes
IPYTHON = "# (IPython) "
#: cell magics whose body is Python that runs in the notebook's namespace
RUN_BODY = {"time", "timeit", "capture", "prun"}
#: cell magics that show something and run no code of the notebook's
DISPLAY = {"html", "HTML", "javascript", "js", "latex", "markdown", "svg", "debug"}
#: line magics and shell calls that run a command of the machine's: not run when grading, and said
SHELL_MAGICS = {"pip", "conda", "mamba", "sx", "system", "sc", "bash", "sh", "script"}
#: the marker lines the intake writes between cells (``notebook._chunk``): a student's line that looks like one
#: gets a space in front, so that only the intake's own lines split a module into cells
MARKER_LIKE = re.compile(r"^# --- .* ---$")


@dataclass
class Cell:
    """One code cell, as grading runs it."""
    source: str
    #: files its ``%%writefile`` writes: (name, text, append)
    written: list[tuple[str, str, bool]] = field(default_factory=list)
    #: what grading does not run, in the cell's own words (a shell command, a shell cell's first line)
    not_run: list[str] = field(default_factory=list)


@functools.lru_cache(maxsize=1)
def _transformer():
    """IPython's cell transformer, or None where IPython is not installed."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager  # noqa: PLC0415 - only for notebooks: 0.3 s to import
    except ImportError:
        return None
    return TransformerManager()


def _commented(lines: list[str]) -> list[str]:
    return [IPYTHON + line if line.strip() else line for line in lines]


def _unmark(text: str) -> str:
    return "\n".join(" " + line if MARKER_LIKE.match(line) else line for line in text.split("\n"))


def transform(source: str) -> Cell:
    """``source`` (a code cell's text) as grading runs it: as many lines as the cell, each where it was."""
    lines = source.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].startswith("%%"):
        return _cell_magic(lines, first)
    text = _python(source, len(lines))
    return Cell(_unmark(text), not_run=_shell_calls(text, lines))


def _python(source: str, count: int) -> str:
    """IPython's transformation of line-level syntax, padded to ``count`` lines (a line continued with a backslash
    into a shell command becomes one); the source as it is where the transformer fails on it (the module's own
    compile then says what is wrong, on its line)."""
    if (not any(mark in source for mark in ("%", "!", "?", ">>>", "In [", "..."))
            and not source.lstrip("\n")[:1].isspace()):
        return source  # nothing the transformer changes (its syntax, pasted prompts, an indented cell): 0.4 ms a cell
    manager = _transformer()
    if manager is None:
        lines = source.splitlines()
        return "\n".join(IPYTHON + line if line.lstrip().startswith(("%", "!")) else line for line in lines)
    try:
        out = manager.transform_cell(source).splitlines()
    except Exception:  # noqa: BLE001 - whatever IPython's tokenizer makes of broken code: it stays as written
        return source
    return "\n".join(out + [""] * max(0, count - len(out)))


def _cell_magic(lines: list[str], first: int) -> Cell:
    words = lines[first][2:].split(None, 1)
    name = words[0] if words else ""
    argument = words[1] if len(words) > 1 else ""
    head = lines[:first] + [IPYTHON + lines[first]]
    body = lines[first + 1:]
    if name in RUN_BODY:
        text = _python("\n".join(body), len(body))
        return Cell(_unmark("\n".join(head + [text])) if body else "\n".join(head), not_run=_shell_calls(text, body))
    cell = Cell("\n".join(head + _commented(body)))
    if name == "writefile":
        target = _writefile_target(argument)
        if target is not None:
            cell.written.append((target[0], "\n".join(body) + "\n", target[1]))
        else:
            cell.not_run.append(lines[first].strip())
    elif name not in DISPLAY:
        cell.not_run.append(lines[first].strip())
    return cell


def _writefile_target(argument: str) -> tuple[str, bool] | None:
    """(the file's name, append) of ``%%writefile [-a|--append] NAME``; None for what staging does not write (a
    name with a folder in it, an option it does not know)."""
    try:
        words = shlex.split(argument)
    except ValueError:
        return None
    append = False
    while words and words[0].startswith("-"):
        if words[0] not in ("-a", "--append"):
            return None
        append = True
        words.pop(0)
    if len(words) != 1 or "/" in words[0] or "\\" in words[0] or words[0].startswith("."):
        return None  # a file elsewhere than beside the notebook: not written, and said
    return words[0], append


def _calls(tree: ast.AST):
    """Each ``get_ipython().METHOD(ARGS...)`` call in ``tree``: (method, the arguments that are plain strings, node)."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name)
                and node.func.value.func.id == "get_ipython"):
            strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            yield node.func.attr, strings, node


def _shell_calls(text: str, lines: list[str]) -> list[str]:
    """The lines of a cell (``lines``, as written; ``text``, as transformed, line for line) that run a machine's
    command: not run when grading."""
    if "get_ipython" not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a cell that does not parse runs nothing
        return []
    found = []
    for method, strings, node in _calls(tree):
        if (method in ("system", "getoutput")
                or (method == "run_line_magic" and strings[:1] and strings[0] in SHELL_MAGICS)):
            line = lines[node.lineno - 1].strip() if node.lineno - 1 < len(lines) else ""
            if line and line not in found:
                found.append(line)
    return found


def written_by_calls(source: str) -> list[tuple[str, str, bool]]:
    """The files a ``.py`` exported from a notebook writes with ``get_ipython().run_cell_magic('writefile', NAME,
    TEXT)`` (nbconvert's form of a ``%%writefile`` cell), read from its text, never run."""
    if "run_cell_magic" not in source:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for method, strings, node in _calls(tree):
        if method == "run_cell_magic" and len(strings) == 3 == len(node.args) and strings[0] == "writefile":
            target = _writefile_target(strings[1])
            if target is not None:
                found.append((target[0], strings[2], target[1]))
    return found


def asks_for_input(source: str) -> bool:
    """Whether ``source`` calls ``input()`` (which answers '' when grading: no one types)."""
    if not re.search(r"\binput\s*\(", source):
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "input"
               for n in ast.walk(tree))
