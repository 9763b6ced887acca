"""What ``grade autograde``'s intake refuses in a module file, refused by ``grade check`` too, in the same words."""
from __future__ import annotations

from pathlib import Path

from autograder.intake.stage import _module_error, _read_source


def module_errors(folder: Path, modules: list[str]) -> dict[str, dict]:
    """Per module file that staging would not grade (not UTF-8, too large, unreadable): its error, as staged."""
    errors = {}
    for module in modules:
        path = Path(folder) / f"{module}.py"
        if not path.is_file():
            continue
        _data, message, cause = _read_source(path, path.name)
        if message:
            errors[module] = _module_error("UnreadableSource", message, cause)
    return errors
