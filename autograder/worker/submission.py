"""Import a student's submission folder as a package, one module at a time, and report what failed."""
from __future__ import annotations

import importlib
import sys
import traceback
import types
from pathlib import Path

from .errors import error

PACKAGE = "submission"


#: the longest exception message an answer carries
MESSAGE_CHARS = 10_000


def describe_exception(exc: BaseException, folder: Path | None = None) -> dict:
    """A plain description of ``exc`` that survives hostile ``__str__`` and ``__repr__``."""
    try:
        message = str(exc)
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


def load(folder: Path, modules: list[str]) -> tuple[dict[str, types.ModuleType], dict[str, dict]]:
    """Import each of ``modules`` from ``folder``; return (imported, errors by module name)."""
    sys.dont_write_bytecode = True
    package = types.ModuleType(PACKAGE)
    package.__path__ = [str(folder)]
    package.__package__ = PACKAGE
    sys.modules[PACKAGE] = package
    init = folder / "__init__.py"
    errors: dict[str, dict] = {}
    if init.is_file():
        try:
            code = compile(init.read_bytes(), str(init), "exec")
            package.__file__ = str(init)
            exec(code, package.__dict__)  # noqa: S102 - this is the student's package, in the sandbox
        except BaseException as exc:  # noqa: BLE001 - whatever the package's __init__ raises is its error
            errors["__init__"] = describe_exception(exc, folder)
    imported = {}
    for name in modules:
        if not (folder / f"{name}.py").is_file():  # staging names a missing module; this only keeps the import out
            errors[name] = error("ModuleNotFoundError", f"No module named '{name}'")
            continue
        try:
            imported[name] = importlib.import_module(f"{PACKAGE}.{name}")
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends at import time count too
            sys.modules.pop(f"{PACKAGE}.{name}", None)
            errors[name] = describe_exception(exc, folder)
    return imported, errors
