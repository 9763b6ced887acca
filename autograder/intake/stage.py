"""Stage one submission: find its modules, copy only regular source files, say what was wrong.

What a student hands in may be a folder, a .zip or tar archive (``untar.py``), notebooks or a single module file,
with the files at the top or nested in a folder or two (``alice.zip/attention/simple_attention.py``); any other
entry (a note, an archive of another kind, several hand-ins under one name) is named with its reason
(``hand_in_kinds.py``, ``discover.py``). Staging copies the module
files into a fresh folder that the sandbox mounts read-only; a notebook becomes the module it is named
after (or, if named otherwise, every module not handed in as .py; a module handed in both ways, the form worked
on: ``both_forms.py``), its cells as the kernel ran them, what its ``%%writefile`` cells wrote written beside it
(``notebook_effects.py``). Symbolic links are never followed. Files that cannot be used become per-module errors, so
only the steps of that module score zero.

Every size is checked before anything is read (``hand_in_sizes.py``), and whatever goes wrong while staging one
submission, a hand-in over a limit or a failure of the kit's own, is that submission's problem: ``stage``
never raises, and the batch goes on with the next (tests/integration/test_staging_limits.py).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from autograder.worker.errors import error

from . import both_forms, hand_in_kinds as kinds, hand_in_sizes, near_miss, notebook, notebook_effects, untar, unzip

IGNORED_DIRS = {"__MACOSX", "__pycache__", ".ipynb_checkpoints", ".git"}
#: files that would configure an interpreter or a test run; the grader never reads them, nor copies them
INERT = {"conftest.py", "sitecustomize.py", "usercustomize.py", "setup.py"}
MAX_SOURCE = hand_in_sizes.MAX_SOURCE


@dataclass
class Staged:
    name: str
    folder: Path | None  # None: nothing could be graded (see ``problem``)
    notes: list[str] = field(default_factory=list)
    module_errors: dict[str, dict] = field(default_factory=dict)
    problem: str | None = None
    #: why nothing could be graded, as data (the class summary's "needs a person" list): ``symlink``,
    #: ``unsupported``, ``empty_folder`` and ``empty_archive`` (no file in it), ``no_modules``,
    #: ``several_copies``, ``unreadable``, the size limits' (``notebook_too_large``, ``folder_too_large``,
    #: ``too_many_files``), the archive's (``corrupt``, ``empty_archive``, ``archive_too_large``,
    #: ``too_many_entries``, ``too_large``, ``zip_bomb``), the hand-in's kind (``unsupported_archive``, ``not_code``,
    #: ``single_file``, ``empty_file``, ``several_hand_ins``: discover.py), ``broken_notebook`` (the one notebook
    #: that was to give every module), or ``staging_error``: the kit's own failure
    cause: str | None = None
    #: the traceback of the kit's own failure while staging (``staging_error``): for grader_errors.log only
    kit_error: str | None = None
    #: files handed in beside it under its name that are not graded (a note): named for a person to read
    beside: list[str] = field(default_factory=list)


def _has_files(root: Path) -> bool:
    """Whether ``root`` holds any regular file (folders and links do not count), a few levels down."""
    for folder in _walk(root):
        try:
            if any(e.is_file(follow_symlinks=False) for e in os.scandir(folder)):
                return True
        except OSError:
            continue
    return False


def _root_cause(problem: str, unpacked: Path, empty: str) -> str:
    return "several_copies" if "several folders" in problem else "no_modules" if _has_files(unpacked) else empty


def _walk(root: Path, depth: int = 3):
    """Directories under ``root`` (itself first), breadth first, never through links."""
    level = [root]
    for _ in range(depth + 1):
        nxt = []
        for folder in level:
            yield folder
            try:
                children = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            nxt += [Path(e.path) for e in children
                    if e.is_dir(follow_symlinks=False) and e.name not in IGNORED_DIRS and not e.name.startswith(".")]
        level = nxt


def _has_modules(folder: Path, modules: list[str]) -> bool:
    return any(os.path.lexists(folder / f"{m}{ext}") for m in modules for ext in (".py", ".ipynb"))


def _has_notebook(folder: Path) -> bool:
    return any(p.suffix == ".ipynb" for p in folder.iterdir() if p.is_file() and not p.is_symlink())


def find_root(unpacked: Path, modules: list[str]) -> tuple[Path | None, str | None]:
    """The folder holding the modules: the top, or the one nested folder that has them.

    Folders with the modules by name win; a folder with some other notebook (one notebook for all the
    modules) counts only when no folder has them by name, so a stray Untitled.ipynb hides nothing.
    """
    found = [d for d in _walk(unpacked) if _has_modules(d, modules)] or \
        [d for d in _walk(unpacked) if _has_notebook(d)]
    if not found:
        return None, f"none of {', '.join(m + '.py' for m in modules)} (or a notebook) is in it"
    shallowest = min(len(d.relative_to(unpacked).parts) for d in found)
    top = [d for d in found if len(d.relative_to(unpacked).parts) == shallowest]
    if len(top) > 1:
        names = ", ".join(str(d.relative_to(unpacked)) + "/" for d in top)
        return None, f"it holds the modules in several folders ({names}); hand in one copy only"
    return top[0], None


def _module_error(kind: str, message: str, cause: str | None = None) -> dict:
    """A module staging could not use; ``cause`` (``unreadable``, ``too_large``, ``not_utf8``) as data. Its ``kind``
    says the trusted side found it (no worker answer carries one: ``sandbox/answers.py``)."""
    return {**error(kind, message), "kind": "staging", **({"cause": cause} if cause else {})}


def _read_source(path: Path, label: str) -> tuple[bytes | None, str | None, str | None]:
    """(the file's bytes, or None with what is wrong and its cause as data)."""
    try:
        data, size = hand_in_sizes.read_at_most(path, MAX_SOURCE)
    except OSError as exc:
        return None, f"{label} cannot be read ({exc.strerror})", "unreadable"
    if data is None:
        return None, _source_refused(label, size), "too_large"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, (f"{label} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
                      "save it with UTF-8 encoding"), "not_utf8"
    return data, None, None


def _source_refused(label: str, size: int) -> str:
    return f"{label} is {size // 1024} KB; source files over {MAX_SOURCE // 1024} KB are not graded"


#: a module error's type, by the cause of the notebook error it comes from
_NOTEBOOK_ERRORS = {"broken_notebook": "MalformedNotebook", "too_large": "UnreadableSource",
                    "unreadable": "UnreadableSource"}


def _read(path: Path, reads: dict) -> "notebook.Read":
    """The notebook at ``path`` as ``notebook.read`` reads it, once per staging (``reads`` keeps it)."""
    if path.name not in reads:
        reads[path.name] = notebook.read(path)
    return reads[path.name]


def _both_forms(root: Path, entries: dict, notebooks: list[str], modules: list[str], steps: dict | None, reads: dict,
                notes: list[str]) -> set[str]:
    """The modules handed in both as ``NAME.py`` and ``NAME.ipynb`` whose notebook is graded (``both_forms.py``); a
    note for each module handed in both ways says which was graded."""
    chosen = set()
    for module in modules:
        entry = entries.get(f"{module}.py")
        if not steps or f"{module}.ipynb" not in notebooks or entry is None or not entry.is_file(follow_symlinks=False):
            continue
        data, _error, _cause = _read_source(Path(entry.path), entry.name)
        try:
            text = notebook.module_source(root / f"{module}.ipynb", module, steps,
                                          _read(root / f"{module}.ipynb", reads))
        except notebook.NotebookError:
            continue  # the .py file is graded, and the notebook's problem is not this module's
        use, note = both_forms.choose(module, (data or b"").decode("utf-8", "replace"), text, f"{module}.ipynb",
                                      steps.get(module, []))
        notes.append(note)
        if use:
            chosen.add(module)
    return chosen


def copy_modules(root: Path, dest: Path, modules: list[str], steps: dict[str, list[str]] | None = None) -> Staged:
    """``steps`` (module -> its step names) lets one notebook for all modules be split by its structure.

    Each notebook is read at most once, and none over ``hand_in_sizes.MAX_NOTEBOOK``; the code a module gets from a
    notebook is held to ``MAX_SOURCE``, as a .py file is. When one notebook over its limit was to give every
    module, the submission is not graded (``notebook_too_large``), as a notebook handed in alone would be."""
    staged = Staged(dest.name, dest)
    split: dict[str, dict[str, str]] = {}
    failed: dict[str, notebook.NotebookError] = {}
    dest.mkdir(parents=True, exist_ok=True)
    entries = {e.name: e for e in os.scandir(root)}
    notebooks = sorted(n for n, e in entries.items() if n.endswith(".ipynb") and e.is_file(follow_symlinks=False))
    reads: dict[str, notebook.Read] = {}  # each notebook read once (notebook.read), however many modules it gives
    made: dict[str, list[str]] = {}  # module -> the notebooks it was read from
    exported: dict[str, str] = {}  # the .py files staged, by name: an exported notebook may %%writefile
    graded_notebook = _both_forms(root, entries, notebooks, modules, steps, reads, staged.notes)
    for name, entry in sorted(entries.items()):
        if not name.endswith(".py") or name[:-3] in graded_notebook:
            continue
        if name in INERT:
            staged.notes.append(f"{name} was ignored: the grader does not run configuration files from submissions")
            continue
        if entry.is_symlink():
            msg = f"{name} is a symbolic link; hand in the file itself"
            staged.notes.append(msg)
            if name[:-3] in modules:
                staged.module_errors[name[:-3]] = _module_error("SymbolicLink", msg)
            continue
        if not entry.is_file(follow_symlinks=False):
            continue
        data, error, cause = _read_source(Path(entry.path), name)
        if error:
            if name[:-3] in modules:
                staged.module_errors[name[:-3]] = _module_error("UnreadableSource", error, cause)
            else:
                staged.notes.append(error)
            continue
        (dest / name).write_bytes(data)
        exported[name] = data.decode("utf-8")
    for module in modules:
        if (dest / f"{module}.py").exists() or module in staged.module_errors:
            continue
        own = f"{module}.ipynb"
        sources = [own] if own in notebooks else [n for n in notebooks if Path(n).stem not in modules]
        if not sources:
            continue
        try:
            broken = next((failed[n] for n in sources if n in failed), None)
            if broken is not None:
                raise broken
            if own not in notebooks and steps:
                for n in sources:
                    if n not in split:
                        try:
                            split[n], unclear = notebook.split(root / n, steps, _read(root / n, reads))
                        except notebook.NotebookError as exc:
                            failed[n] = exc
                            raise
                        staged.notes += unclear
                text = "\n".join(split[n][module] for n in sources)
            elif own in notebooks and steps:
                text = notebook.module_source(root / own, module, steps, _read(root / own, reads))
            else:
                text = "\n".join(notebook.to_source(root / n, _read(root / n, reads)) for n in sources)
        except notebook.NotebookError as exc:
            if len(sources) == 1:
                failed.setdefault(sources[0], exc)
            cause = exc.cause if exc.cause != "broken_notebook" else None
            staged.module_errors[module] = _module_error(_NOTEBOOK_ERRORS[exc.cause], str(exc), cause)
            continue
        size = len(text.encode("utf-8"))
        if size > MAX_SOURCE:
            staged.module_errors[module] = _module_error(
                "UnreadableSource", _source_refused(f"the code cells of {', '.join(sources)} for {module}", size),
                "too_large")
            continue
        (dest / f"{module}.py").write_text(text, encoding="utf-8")
        staged.notes.append(f"{module} was read from the code cells of {', '.join(sources)}")
        made[module] = list(sources)
    staged.notes += notebook_effects.settle(dest, made, {n: r for n, r in reads.items() if n in
                                                         {s for used in made.values() for s in used}}, exported, INERT)
    for module in modules:
        if module in staged.module_errors:
            continue
        if not (dest / f"{module}.py").exists():
            missed = near_miss.find(root, module, modules)
            staged.module_errors[module] = _module_error(
                "MissingModule", f"{module}.py (or {module}.ipynb) is missing from the submission"
                + (f"; {near_miss.rename(missed, module)}" if missed else ""))
            if missed:
                staged.module_errors[module]["near_miss"] = missed
    for cause, whole in (("too_large", "notebook_too_large"), ("broken_notebook", "broken_notebook")):
        refused = {str(e) for e in failed.values() if e.cause == cause}
        if len(refused) == 1 and len(staged.module_errors) == len(modules) and \
                all(e.get("message") in refused for e in staged.module_errors.values()):
            # the one notebook that was to give every module: the hand-in is not graded, said once
            shutil.rmtree(dest, ignore_errors=True)
            return Staged(staged.name, None, staged.notes, problem=refused.pop(), cause=whole)
    return staged


def stage(source: Path, name: str, staging: Path, modules: list[str], steps: dict[str, list[str]] | None = None,
          others: tuple[Path, ...] = (), beside: tuple[Path, ...] = ()) -> Staged:
    """Stage ``source`` (a folder, an archive, a notebook or a .py file) as ``staging/name``; never raises (but on
    Ctrl-C). ``others``: more gradable hand-ins of the same name (then none is graded); ``beside``: files handed in
    under its name that are not graded (a note), named for a person to read (``Staged.beside``).

    Whatever stops it is this submission's problem, as data: a hand-in over a size limit (``hand_in_sizes.py``, checked
    before it is read), one that cannot be read (``unreadable``), and any failure of the kit's own
    (``staging_error``, its traceback in ``kit_error`` for grader_errors.log; the student reads a fixed
    sentence, never the exception's words). tests/integration/test_staging_limits.py shows each."""
    found = _staged(source, name, staging, modules, steps, others)
    if beside:
        found.beside = [p.name for p in beside]
        found.notes.append(f"Handed in beside it, not graded: {', '.join(found.beside)} (your instructor reads it)")
    return found


def _staged(source: Path, name: str, staging: Path, modules: list[str], steps: dict[str, list[str]] | None,
            others: tuple[Path, ...]) -> Staged:
    dest = staging / name
    if others:
        handed = ", ".join(p.name + ("/" if p.is_dir() else "") for p in (source, *others))
        return Staged(name, None, problem=f"{len(others) + 1} hand-ins under one name ({handed}); none was graded: "
                      "your instructor decides which one counts", cause="several_hand_ins")
    try:
        return _stage(source, name, dest, staging, modules, steps)
    except unzip.ArchiveError as exc:
        found = Staged(name, None, problem=str(exc), cause=exc.cause)
    except hand_in_sizes.TooLarge as exc:
        found = Staged(name, None, problem=str(exc), cause=exc.cause)
    except OSError as exc:
        found = Staged(name, None, problem=f"{source.name} cannot be read ({exc.strerror or 'an error of the system'})",
                       cause="unreadable")
    except Exception:  # noqa: BLE001 - the kit's own failure: this submission's problem, not the class's
        found = Staged(name, None, problem=f"{source.name} could not be staged: the grader itself failed on it (its "
                       "error, not the hand-in's); your instructor has the details", cause="staging_error",
                       kit_error=traceback.format_exc())
    shutil.rmtree(dest, ignore_errors=True)
    return found


def _unpacked(source: Path, name: str, dest: Path, staging: Path, modules: list[str],
              steps: dict[str, list[str]] | None, extract) -> Staged:
    """An archive's hand-in: unpacked by ``extract`` into a folder of its own, then staged as a folder is."""
    unpacked = Path(tempfile.mkdtemp(prefix="unpack-", dir=staging))
    try:
        notes = extract(source, unpacked)
        root, problem = find_root(unpacked, modules)
        if problem:
            return Staged(name, None, notes=notes, problem=f"{source.name}: {problem}",
                          cause=_root_cause(problem, unpacked, "empty_archive"))
        staged = copy_modules(root, dest, modules, steps)
        staged.notes[:0] = notes
        return staged
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)


def _stage(source: Path, name: str, dest: Path, staging: Path, modules: list[str],
           steps: dict[str, list[str]] | None) -> Staged:
    if source.is_symlink():
        return Staged(name, None, problem=f"{source.name} is a symbolic link; hand in the folder or archive itself",
                      cause="symlink")
    kind = kinds.suffix(source)
    if kind in kinds.ZIP and source.is_file():
        staged = _unpacked(source, name, dest, staging, modules, steps, unzip.extract)
    elif kind in kinds.TAR and source.is_file():
        staged = _unpacked(source, name, dest, staging, modules, steps, untar.extract)
    elif kind in kinds.NOTEBOOK and source.is_file():
        hand_in_sizes.check_notebook(source, source.name)
        single = Path(tempfile.mkdtemp(prefix="nb-", dir=staging))
        try:
            shutil.copyfile(source, single / source.name)
            staged = copy_modules(single, dest, modules, steps)
        finally:
            shutil.rmtree(single, ignore_errors=True)
    elif kind in kinds.SOURCE and source.is_file():
        staged = _single_file(source, name, dest, staging, modules, steps)
    elif source.is_dir():
        hand_in_sizes.check_folder(source, source.name, IGNORED_DIRS)
        root, problem = find_root(source, modules)
        if problem:
            return Staged(name, None, problem=f"{source.name}/: {problem}",
                          cause=_root_cause(problem, source, "empty_folder"))
        staged = copy_modules(root, dest, modules, steps)
    elif kind in kinds.OTHER_ARCHIVES:
        return Staged(name, None,
                      problem=f"{source.name}: a {kind} archive, which is not unpacked here; hand in a .zip "
                      "(or a .tar.gz) of your exercise files", cause="unsupported_archive")
    else:
        return Staged(name, None, problem=f"{source.name}: a {kind or 'file'} file, not your exercise code; hand in "
                      "your exercise files (a folder, a .zip or a notebook)", cause="not_code")
    if isinstance(staged, Staged) and staged.folder is None:
        return staged
    staged.name = name
    for path in [dest, *dest.iterdir()]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    if len(staged.module_errors) == len(modules) and all(e["type"] == "MissingModule"
                                                         for e in staged.module_errors.values()):
        staged.problem = f"{source.name}: none of {', '.join(m + '.py' for m in modules)} is in it"
        staged.cause = "no_modules"
    return staged


def _single_file(source: Path, name: str, dest: Path, staging: Path, modules: list[str],
                 steps: dict[str, list[str]] | None) -> Staged:
    """One ``.py`` file handed in alone: the module it is named after (the others are missing); a file named
    otherwise holds no module by name (``no_modules``), said with what to hand in."""
    size = os.lstat(source).st_size
    if size > MAX_SOURCE:
        return Staged(name, None, problem=_source_refused(source.name, size), cause="too_large")
    if source.stem not in modules:
        if size == 0:
            return Staged(name, None, problem=f"{source.name} is empty", cause="empty_file")
        return Staged(name, None, problem=f"{source.name}: a single .py file not named after a module ("
                      f"{', '.join(m + '.py' for m in modules)}); hand in the module files (a folder or a .zip) or "
                      "one notebook", cause="single_file")
    single = Path(tempfile.mkdtemp(prefix="py-", dir=staging))
    try:
        shutil.copyfile(source, single / source.name, follow_symlinks=False)
        return copy_modules(single, dest, modules, steps)
    finally:
        shutil.rmtree(single, ignore_errors=True)
