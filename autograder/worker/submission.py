"""Import a student's submission folder as a package, module by module as a step asks, and report what failed.

The folder runs as it runs for the student:

- its modules are ``submission.NAME``, so a stub's ``from .causal_attention import CausalAttention`` works; and each
  ``.py`` file of the folder (a module of the unit, or a helper such as ``utils.py``) is importable by its own name
  too, the same module object (``from causal_attention import CausalAttention``, ``from utils import softmax``), as
  with ``python`` run in the student's folder;
- a module read from a notebook (``notebooks``: the trusted side says which) runs cell by cell, as nbgrader runs a
  notebook: a cell that raises is recorded (``cell_errors``) and the next cell runs, so the steps defined before it,
  and after it where they do not depend on it, are there to grade. Its lines are the staged file's lines, which the
  trusted side maps back to the notebook's cells (``intake/staged_cells.py``);
- a module of the unit that does not import costs its own steps (``errors``), and the modules that import it get, in
  its place, what it should have provided: the stand-in of each of its steps this worker holds (as when that step is
  wrong), else a placeholder that raises when it is used (``grade check``, which holds no stand-ins).

A worker imports the module of the step it grades, and what that module imports (``child.py``): one module's trouble
(a slow cell, a module that does not import) stays with that module's steps.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import re
import sys
import traceback
import types
from pathlib import Path

from .errors import error

PACKAGE = "submission"


#: the longest exception message an answer carries
MESSAGE_CHARS = 10_000
#: at most this many failing cells of a module are reported
MAX_CELL_ERRORS = 20
#: the intake's lines between a notebook's cells (``intake/notebook.py``); a student's line like one was shifted
CELL_MARKER = re.compile(r"^# --- .* ---$", re.M)


def _student_words(message: str, folder: Path | None) -> str:
    """A message with the kit's package name and the sandbox's folder taken out: ``No module named 'utils'``, not
    ``No module named 'submission.utils'`` (a name the student never wrote)."""
    message = message.replace(f"'{PACKAGE}.", "'").replace(f'"{PACKAGE}.', '"')
    if folder is not None:
        message = message.replace(str(folder).rstrip("/") + "/", "")
    return message


def describe_exception(exc: BaseException, folder: Path | None = None) -> dict:
    """A plain description of ``exc`` that survives hostile ``__str__`` and ``__repr__``."""
    try:
        message = str(exc)
        if isinstance(exc, ImportError):
            message = _student_words(message, folder)
        if len(message) > MESSAGE_CHARS:  # an answer's header stays small (wire.MAX_HEADER)
            message = message[:MESSAGE_CHARS] + " [... cut]"
    except BaseException:  # noqa: BLE001 - student exceptions may raise anything from __str__
        message = "<the exception's message could not be printed>"
    try:
        kind = type(exc).__name__
        kind = kind if isinstance(kind, str) else "Exception"
    except BaseException:  # noqa: BLE001 - a hostile exception class's name
        kind = "Exception"
    where = None
    try:
        frames = traceback.extract_tb(exc.__traceback__)
        if folder is not None:
            frames = [f for f in frames if f.filename.startswith(str(folder))]
        if frames:
            last = frames[-1]
            where = {"file": Path(last.filename).name, "line": last.lineno, "function": last.name}
    except BaseException:  # noqa: BLE001 - a hostile traceback: no location, never a crash
        pass
    if isinstance(exc, SyntaxError) and exc.filename:
        where = {"file": Path(exc.filename).name, "line": exc.lineno, "function": None,
                 "text": (exc.text or "").rstrip()[:200], "column": exc.offset}
        try:
            message = exc.msg
        except BaseException:  # noqa: BLE001 - a hostile SyntaxError's msg
            pass
    return error(kind, message, where)


def cells_of(text: str) -> list[tuple[int, str]]:
    """A notebook's module cut at the intake's marker lines: (the 1-based line each piece starts on, its text)."""
    starts = [0] + [m.start() for m in CELL_MARKER.finditer(text) if m.start() > 0]
    pieces = []
    for begin, end in zip(starts, starts[1:] + [len(text)]):
        pieces.append((text.count("\n", 0, begin) + 1, text[begin:end]))
    return pieces


def _compiled(piece: str, path: str, first: int):
    """``piece`` compiled as lines ``first``... of ``path`` (the lines before it left empty, so that every line number,
    and a syntax error's text, is the staged file's), with no future flag of the kit's."""
    return compile("\n" * (first - 1) + piece, path, "exec", dont_inherit=True)


class _Placeholder:
    """What a name of a module that did not import is, where no stand-in is held: it raises when it is used."""

    _said = "a module that did not import"

    def __init__(self, *args, **kwargs):
        raise ImportError(self._said)

    def __init_subclass__(cls, **kwargs):  # a student's class may derive from it: that class raises when built
        super().__init_subclass__(**kwargs)


def placeholder(module: str, name: str) -> type:
    said = f"{module} could not be imported, so {name} is not defined"
    return type(name, (_Placeholder,), {"_said": said, "__module__": module, "__qualname__": name})


class NotImported(types.ModuleType):
    """A module of the unit that did not import, as the modules importing it see it: each of its steps is the stand-in
    this worker holds (as when that step is wrong), every other name a placeholder (``placeholder``)."""

    def __init__(self, owner: "Submission", module: str):
        super().__init__(f"{PACKAGE}.{module}")
        self.__dict__["_owner"] = owner
        self.__dict__["_unit_module"] = module
        self.__package__ = PACKAGE

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        held = self._owner.standins.get(f"{self._unit_module}.{name}")
        return held if held is not None else placeholder(self._owner.said(self._unit_module), name)


class _Loader(importlib.abc.Loader):
    def __init__(self, owner: "Submission", name: str):
        self.owner, self.name = owner, name

    def create_module(self, spec):
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        self.owner.run(self.name, module)


class _Alias(importlib.abc.Loader):
    """A file of the folder imported by its own name (``import utils``): the same module as ``submission.utils``."""

    def __init__(self, name: str):
        self.name = name
        self.spec = None

    def create_module(self, spec):
        module = importlib.import_module(f"{PACKAGE}.{self.name}")
        self.spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self.spec  # the import system set the alias's own: the module stays what it is


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``submission.NAME`` and ``NAME`` for each ``.py`` file of the folder (and each module of the unit that
    staging refused, which did not import)."""

    def __init__(self, owner: "Submission"):
        self.owner = owner

    def find_spec(self, fullname: str, path=None, target=None):
        owner = self.owner
        name = fullname[len(PACKAGE) + 1:] if fullname.startswith(PACKAGE + ".") else None
        if name is not None and (name in owner.files or name in owner.refused):
            origin = str(owner.files[name]) if name in owner.files else None
            return importlib.machinery.ModuleSpec(fullname, _Loader(owner, name), origin=origin)
        if fullname in owner.files or fullname in owner.refused:
            return importlib.machinery.ModuleSpec(fullname, _Alias(fullname))
        return None


class Submission:
    """The student's package in this worker: the modules imported so far, and what failed."""

    def __init__(self, folder: Path, modules: list[str], notebooks=(), refused=(), standins: dict | None = None):
        """``notebooks``: the modules read from notebooks; ``refused``: the modules staging could not use (not UTF-8,
        a link, a broken notebook), which did not import: both as the trusted side says."""
        sys.dont_write_bytecode = True
        self.folder = Path(folder)
        self.unit = list(modules)
        self.notebooks = set(notebooks)
        self.refused = {m for m in refused if m in self.unit}
        #: the unit's modules imported so far (a live dict: the workspace holds it)
        self.modules: dict[str, types.ModuleType] = {}
        #: the unit's modules that did not import (and ``__init__``), by name
        self.errors: dict[str, dict] = {}
        #: a notebook's module: each cell that raised, in order
        self.cell_errors: dict[str, list[dict]] = {}
        #: step -> the stand-in this worker holds (a live dict: the workspace fills it)
        self.standins = standins if standins is not None else {}
        try:
            self.files = {p.stem: p for p in self.folder.iterdir()
                          if p.suffix == ".py" and p.is_file() and p.stem.isidentifier()
                          and not p.stem.startswith("__")}
        except OSError:
            self.files = {}
        package = types.ModuleType(PACKAGE)
        package.__path__ = [str(self.folder)]  # its modules are found by _Finder first
        package.__package__ = PACKAGE
        sys.modules[PACKAGE] = package
        sys.meta_path.insert(0, _Finder(self))
        init = self.folder / "__init__.py"
        if init.is_file():
            try:
                code = compile(init.read_bytes(), str(init), "exec", dont_inherit=True)
                package.__file__ = str(init)
                exec(code, package.__dict__)  # noqa: S102 - this is the student's package, in the sandbox
            except BaseException as exc:  # noqa: BLE001 - whatever the package's __init__ raises is its error
                self.errors["__init__"] = describe_exception(exc, self.folder)

    def said(self, module: str) -> str:
        """How a module is named to the student: its file, or (read from a notebook) its name."""
        return module if module in self.notebooks else f"{module}.py"

    def import_module(self, name: str) -> None:
        """Import the unit's module ``name`` (and what it imports), once; its failure is recorded, never raised."""
        if name in self.modules or name in self.errors:
            return
        if name not in self.files and name not in self.refused:  # staging names it; this only keeps the import out
            self.errors[name] = error("ModuleNotFoundError", f"No module named '{name}'")
            return
        try:
            importlib.import_module(f"{PACKAGE}.{name}")
        except BaseException as exc:  # noqa: BLE001 - recorded by ``run``; anything else is this module's own too
            self.errors.setdefault(name, describe_exception(exc, self.folder))

    def run(self, name: str, module: types.ModuleType) -> None:
        """Run the file ``name`` in ``module`` (``_Loader``): a notebook's cell by cell, a ``.py`` file as Python
        does. A module of the unit that fails is recorded and replaced by ``NotImported`` (its importers go on); a
        helper's failure is raised, as Python raises it, to the module importing it."""
        if name in self.refused:  # staging said why; the modules importing it go on beside what it should provide
            sys.modules[f"{PACKAGE}.{name}"] = NotImported(self, name)
            return
        path = self.files[name]
        module.__file__ = str(path)
        if name in self.notebooks:
            self._cells(name, path, module)
        else:
            try:
                exec(_compiled_file(path), module.__dict__)  # noqa: S102 - the student's module, in the sandbox
            except BaseException as exc:
                if name not in self.unit:
                    raise
                self.errors[name] = describe_exception(exc, self.folder)
                sys.modules[f"{PACKAGE}.{name}"] = NotImported(self, name)
                return
        if name in self.unit:
            self.modules[name] = module

    def _cells(self, name: str, path: Path, module: types.ModuleType) -> None:
        """A notebook's module, cell by cell: a cell that raises is recorded, and the next one runs."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.errors[name] = describe_exception(exc, self.folder)
            return
        failed = self.cell_errors.setdefault(name, [])
        for first, piece in cells_of(text):
            try:
                exec(_compiled(piece, str(path), first), module.__dict__)  # noqa: S102 - the student's cell
            except BaseException as exc:  # noqa: BLE001 - a cell that raises, as nbgrader runs past it
                if len(failed) < MAX_CELL_ERRORS:
                    failed.append(describe_exception(exc, self.folder))
        if not failed:
            del self.cell_errors[name]


def _compiled_file(path: Path):
    return compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
