"""Import a student's submission folder as a package, one module at a time, and report what failed."""
from __future__ import annotations

import importlib
import sys
import traceback
import types
from pathlib import Path

from . import limits
from .errors import error

PACKAGE = "submission"


#: the longest exception message an answer carries
MESSAGE_CHARS = 10_000
#: how much of the grader's own traceback an answer carries (for the instructor's log)
GRADER_FRAMES_CHARS = 2_000


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
    where, grader_frames = None, None
    try:
        frames = traceback.extract_tb(exc.__traceback__)
        if folder is not None:
            mine = [f for f in frames if f.filename.startswith(str(folder))]
            if not mine:  # the grader's own frames: for the instructor's log, never for the student
                grader_frames = "".join(traceback.format_list(frames[-4:]))[-GRADER_FRAMES_CHARS:]
            frames = mine
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
    found = error(kind, message, where)
    limit = limits.hit(exc)
    if limit is not None:
        found.update(limit)
    if grader_frames:
        found["grader_frames"] = grader_frames
    return found


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
        if not (folder / f"{name}.py").is_file():
            errors[name] = error("MissingModule", f"{name}.py is missing from the submission")
            continue
        try:
            imported[name] = importlib.import_module(f"{PACKAGE}.{name}")
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends at import time count too
            sys.modules.pop(f"{PACKAGE}.{name}", None)
            errors[name] = describe_exception(exc, folder)
    return imported, errors
