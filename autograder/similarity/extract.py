"""Each submission's code, step by step: staged exactly as ``grade autograde`` stages it, then parsed, never run.

Folders, .zip archives, notebooks (one per module or one for all) and nbgrader's ``submitted/`` go through
``autograder/intake`` (the same discovery, names and staging), so a pair in the report names submissions as
their results folders do. A step is the top-level function or class of its name in its module, with the
helper functions and classes it calls (a step moved into a helper is still that step). A module that does
not parse gets a note, and its steps are not compared.
"""
from __future__ import annotations

import ast
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder.intake.discover import Source
from autograder.intake.stage import stage

from .normalise import Module, Token, tokens


@dataclass
class StepCode:
    step: str                        # module.name
    tokens: list[Token]
    module: str                      # the module file the code is in
    source: str                      # that file's whole text
    spans: list[tuple[int, int]]     # the character ranges of the step and its helpers in ``source``


@dataclass
class Submission:
    name: str
    term: str = "current"            # or "previous" (--against)
    steps: dict[str, StepCode] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.name if self.term == "current" else f"{self.term}:{self.name}"


def step_nodes(module: Module, name: str, step_names: set[str]) -> list[ast.AST] | None:
    """The definition of step ``name`` and the module's other definitions it reaches (not other steps)."""
    defs = module.definitions()
    if name not in defs:
        return None
    chosen, todo = [defs[name]], [defs[name]]
    while todo:
        for ref in sorted(module.names_in.get(todo.pop(), ())):
            node = defs.get(ref)
            if node is not None and ref not in step_names and node not in chosen:
                chosen.append(node)
                todo.append(node)
    return chosen


def _span(node: ast.AST, module: Module) -> tuple[int, int]:
    first = node.decorator_list[0] if getattr(node, "decorator_list", None) else node
    return module.offset(first.lineno, 0), module.offset(*module.end(node))


def parse(source: str, label: str) -> tuple[Module | None, str | None]:
    """The module, or a note saying why it cannot be compared."""
    try:
        return Module(source), None
    except SyntaxError as exc:
        return None, (f"{label} does not parse (line {exc.lineno}: {exc.msg}), so its steps were not compared; "
                      "it was read, not run")
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, f"{label} cannot be parsed ({type(exc).__name__}), so its steps were not compared"
    except Exception as exc:  # noqa: BLE001 - tokenize's own errors on odd text: a note, never a crash
        return None, f"{label} cannot be read as Python ({type(exc).__name__}), so its steps were not compared"


def read_module(source: str, label: str, module_name: str, names: list[str],
                kept: set[str]) -> tuple[dict[str, StepCode], list[str]]:
    """The steps of one module's source."""
    module, note = parse(source, label)
    if module is None:
        return {}, [note]
    found = {}
    for name in names:
        nodes = step_nodes(module, name, set(names))
        if nodes is None:
            continue
        found[f"{module_name}.{name}"] = StepCode(f"{module_name}.{name}", tokens(module, nodes, kept), label, source,
                                                  [_span(n, module) for n in nodes])
    return found, []


def read_folder(folder: Path, steps_by_module: dict[str, list[str]],
                kept: set[str]) -> tuple[dict[str, StepCode], list[str]]:
    """The steps of the modules in a folder of .py files (a staged submission, exercises/, solutions/)."""
    steps, notes = {}, []
    for module_name, names in steps_by_module.items():
        path = folder / f"{module_name}.py"
        if not path.is_file():
            continue
        found, more = read_module(path.read_text(encoding="utf-8", errors="replace"), path.name, module_name, names,
                                  kept)
        steps.update(found)
        notes += more
    return steps, notes


def collect(sources: list[Source], steps_by_module: dict[str, list[str]], term: str = "current") -> list[Submission]:
    """Stage each source (no code runs) and read its steps."""
    modules = list(steps_by_module)
    kept = {name for names in steps_by_module.values() for name in names}
    found = []
    staging = Path(tempfile.mkdtemp(prefix="similarity-"))
    try:
        for source in sources:
            staged = stage(source.path, source.name, staging, modules, steps_by_module)
            sub = Submission(source.name, term)
            if staged.problem:
                sub.notes.append(staged.problem)
            else:
                sub.notes += staged.notes
                for module, error in staged.module_errors.items():
                    if error["type"] != "MissingModule":
                        sub.notes.append(f"{module}: {error['message']}")
                sub.steps, more = read_folder(staged.folder, steps_by_module, kept)
                sub.notes += more
                shutil.rmtree(staged.folder, ignore_errors=True)
            found.append(sub)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return found
