"""What ``grade check`` (and ``%grade check``) checks: what ``grade autograde`` takes, through the same intake.

A folder of ``.py`` files is checked where it is. A notebook (one per module, or one for all modules), a
``.zip``, or a folder of notebooks is staged first by ``autograder/intake/stage.py``, exactly as ``grade
autograde`` stages a submission, into a temporary folder that ``close`` removes. So is a folder over a size
limit (``autograder/intake/hand_in_sizes.py``): the check refuses what grade autograde would, in its words.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder.intake import hand_in_sizes, ipython_cells, near_miss, notebook_effects
from autograder.intake.stage import IGNORED_DIRS, _module_error, _read_source, stage

STAGED = (".ipynb", ".zip")


@dataclass
class Checked:
    folder: Path                       # the module files that are checked
    staged: bool = False               # from notebooks or an archive, through the intake
    notes: list[str] = field(default_factory=list)     # what the intake said (read from which cells)
    problems: list[str] = field(default_factory=list)  # modules it could not use (a broken notebook)
    module: str | None = None          # a single module's notebook: check that module
    #: the modules the intake refused (not UTF-8, a link, a broken notebook), as grade autograde's staging says them
    module_errors: dict = field(default_factory=dict)
    _temp: Path | None = None

    @property
    def notebooks(self) -> dict[str, list[str]]:
        """module -> the notebooks it was read from (a staged folder only): such a module runs cell by cell."""
        return notebook_effects.from_notebooks(self.folder) if self.staged else {}

    def close(self) -> None:
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None


def needs_staging(path: Path, modules: list[str]) -> bool:
    """A notebook or an archive; a folder that has notebooks but none of the module files, or a module both as a
    file and a notebook; a folder over a size limit (staging refuses it); a folder with a module file the intake
    refuses (then the other modules see it missing, as they do in grade autograde), or with a file exported from a
    notebook that writes a file it imports (``writes_files``)."""
    if path.is_file():
        return path.suffix.lower() in STAGED
    if not path.is_dir():
        return False
    try:
        hand_in_sizes.check_folder(path, path.name, IGNORED_DIRS)
    except (hand_in_sizes.TooLarge, OSError):
        return True
    if not any((path / f"{m}.py").exists() for m in modules):
        return any(p.suffix == ".ipynb" for p in path.iterdir() if p.is_file()) or _near_misses(path, modules)
    if any((path / f"{m}.py").exists() and (path / f"{m}.ipynb").is_file() for m in modules):
        return True  # a module handed in both ways: staging grades the one worked on (intake/both_forms.py)
    return bool(module_errors(path, modules)) or writes_files(path) or _near_misses(path, modules)


def _near_misses(folder: Path, modules: list[str]) -> bool:
    """A module missing with a file there that was most likely meant to be it (``causal_attention (1).py``): staged,
    so that its message names the rename, as grade autograde's does (intake/near_miss.py)."""
    return any(not (folder / f"{m}.py").exists() and near_miss.find(folder, m, modules) for m in modules)


def writes_files(path: Path) -> bool:
    """Whether a ``.py`` file of ``path`` (exported from a notebook) writes a file with ``%%writefile`` that is not
    there: staging writes it, as grade autograde does (``intake/notebook_effects.py``)."""
    for source in path.glob("*.py"):
        data, _message, _cause = _read_source(source, source.name)
        text = data.decode("utf-8") if data is not None else ""
        if any(not (path / name).exists() for name, _text, _append in ipython_cells.written_by_calls(text)):
            return True
    return False


def steps_by_module(step_names: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for step in step_names:
        module, name = step.split(".", 1)
        found.setdefault(module, []).append(name)
    return found


def prepare(path: Path, modules: list[str], step_names: list[str]) -> Checked:
    """``path`` ready to check; raises ValueError with the intake's words when nothing in it can be checked."""
    if not needs_staging(path, modules):
        return Checked(path)
    temp = Path(tempfile.mkdtemp(prefix="grade-check-"))
    staged = stage(path.resolve(), "submission", temp, modules, steps_by_module(step_names))
    if staged.folder is None:
        shutil.rmtree(temp, ignore_errors=True)
        raise ValueError(staged.problem or f"{path}: nothing to check in it")
    problems = [e["message"] for e in staged.module_errors.values() if e.get("type") != "MissingModule"]
    module = path.stem if path.suffix.lower() == ".ipynb" and path.stem in modules else None
    return Checked(staged.folder, True, staged.notes, problems, module, dict(staged.module_errors), temp)


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
