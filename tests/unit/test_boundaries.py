"""The kit's parts stand in layers, and the process boundary is drawn as two folders.

Read from the source, not run (every import, those inside functions too):

- no circle among ``autograder``'s top-level parts (each folder of it, each module beside them, and the package's
  own ``__init__.py``, which hands ``%load_ext autograder`` on to ``check/``): a part never imports, directly or
  through others, a part that imports it;
- the lower layers (the judging, the sandbox's two sides, the feedback, the results, the intake, the pages, the
  similarity reports) import none of the verbs' parts (the command line, ``commands/``, ``autograde/``, ``check/``,
  ``assign/``, ``release/``, ``gradescope/``, ``lti/``, ``nbgrader_course/``);
- ``worker/`` (what runs untrusted) imports nothing of the rest of ``autograder`` (the zygote loads it as a folder
  of its own, beside nothing of the instructor's); ``sandbox/`` (its trusted halves) imports ``worker/`` and nothing
  else of the kit; each of its halves is named after its other half, and those pairs are the only basenames two
  modules share.

The controls: a small tree whose two parts import each other (one of them inside a function) is found a circle;
so is one whose low part reads a name of the package's ``__init__.py`` that imports its high part.
"""
from __future__ import annotations

import ast
import collections
import json
from pathlib import Path


from autograder.worker.isolation import NAMES, ORDER, Level

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"

#: the two halves of each boundary: sandbox/<name>.py talks to worker/<name>.py
HALVES = ("host", "zygote", "spawned", "reference_server", "argument_buffer")
#: in sandbox/ without a half in worker/: what the halves need and nothing else does
SANDBOX_ONLY = ("local_zygote", "uids", "per_request", "standin_answers", "answers")


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it (relative imports resolved against its package)."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            found.add(".".join(part for part in (base, node.module) if part))
    return found


def _ours(folder: str) -> dict[str, set[str]]:
    return {path.name: {name for name in _imported(path) if name.split(".")[0] == "autograder"}
            for path in sorted((PACKAGE / folder).glob("*.py"))}


#: the lower layers, and the verbs' parts none of them may import
LOWER = ("grading", "worker", "sandbox", "feedback", "outputs", "intake", "pages", "similarity")
VERBS = ("cli", "commands", "autograde", "check", "assign", "release", "gradescope", "lti", "nbgrader_course")


#: the part that stands for the package's own ``__init__.py``
ROOT = "__init__"


def _module_imports(root: Path) -> dict[str, set[str]]:
    """module -> every ``autograder`` name it imports, anywhere in it: ``from a import b`` gives ``a`` and ``a.b``;
    the package itself (``autograder``) only where a name of its ``__init__.py`` is read (``import autograder``,
    ``from autograder import __version__``), not for ``from autograder import console``."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        here = parts[:-1]  # the package a relative import starts from
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1]) if node.level else ""
                base = ".".join(part for part in (base, node.module) if part)
                if base != root.name or any(not _is_module(root, alias.name) for alias in node.names):
                    names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
        found[module] = {name for name in names if name.split(".")[0] == root.name}
    return found


def _is_module(root: Path, name: str) -> bool:
    return (root / f"{name}.py").is_file() or (root / name / "__init__.py").is_file()


def _part(name: str, parts: set[str]) -> str | None:
    """The top-level part of ``autograder.x.y`` (``x``), ``ROOT`` for the package itself, or None for a name of
    the package's ``__init__.py``."""
    if "." not in name:
        return ROOT
    first = name.split(".")[1]
    return first if first in parts else None


def _parts_graph(root: Path = PACKAGE, leave_out=frozenset()) -> dict[str, set[str]]:
    """part -> the other parts it imports (parts: each folder of ``root``, each module beside them, and ``ROOT``:
    its ``__init__.py``)."""
    parts = {p.stem if p.is_file() else p.name for p in root.iterdir()
             if (p.is_dir() and (p / "__init__.py").is_file()) or p.suffix == ".py"}
    graph: dict[str, set[str]] = {part: set() for part in parts}
    for module, names in _module_imports(root).items():
        source = _part(module, parts)
        for name in names:
            target = _part(name, parts)
            if source and target and target != source and (module, target) not in leave_out:
                graph[source].add(target)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one part (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                other = stack.pop()
                group.append(other)
                if other == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_circle_among_the_kit_s_parts():
    graph = _parts_graph()
    assert {"grading", "worker", "check", "cli", "commands"} <= set(graph)  # the parts are found
    assert _circles(graph) == []


def test_the_lower_layers_import_none_of_the_verbs():
    graph = _parts_graph()
    assert {part: sorted(graph[part] & set(VERBS)) for part in LOWER if graph[part] & set(VERBS)} == {}


def test_a_circle_is_found_through_an_import_inside_a_function(tmp_path):
    root = tmp_path / "autograder"
    for folder, text in {"low": "def later():\n    from autograder.high import verb\n    return verb\n",
                         "high": "from autograder.low import x\n"}.items():
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("", encoding="utf-8")
        (root / folder / "x.py").write_text(text, encoding="utf-8")
    (root / "__init__.py").write_text("", encoding="utf-8")
    assert _parts_graph(root) == {"low": {"high"}, "high": {"low"}, ROOT: set()}
    assert _circles(_parts_graph(root)) == [["high", "low"]]
    assert _circles(_parts_graph(root, leave_out={("autograder.low.x", "high")})) == []


def test_a_circle_is_found_through_the_package_s_own_init(tmp_path):
    root = tmp_path / "autograder"
    for folder, text in {"low": "import autograder\nWHERE = autograder.__file__\n",
                         "high": "from autograder.low import x\n",
                         "side": "from autograder import low\n"}.items():
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("", encoding="utf-8")
        (root / folder / "x.py").write_text(text, encoding="utf-8")
    (root / "__init__.py").write_text("def hook():\n    from autograder.high import x\n", encoding="utf-8")
    assert _parts_graph(root) == {"low": {ROOT}, "high": {"low"}, "side": {"low"}, ROOT: {"high"}}
    assert _circles(_parts_graph(root)) == [[ROOT, "high", "low"]]
    assert _circles(_parts_graph(root, leave_out={("autograder.low.x", ROOT)})) == []


def test_nothing_in_worker_imports_the_rest():
    for name, imports in _ours("worker").items():
        assert all(i == "autograder.worker" or i.startswith("autograder.worker.") for i in imports), (name, imports)


def test_the_sandbox_imports_worker_only():
    for name, imports in _ours("sandbox").items():
        outside = {i for i in imports if not i.startswith(("autograder.worker", "autograder.sandbox"))}
        assert not outside, (name, outside)


def test_each_sandbox_file_is_named_after_its_other_half_in_worker():
    stems = {path.stem for path in (PACKAGE / "sandbox").glob("*.py")} - {"__init__"}
    assert stems == set(HALVES) | set(SANDBOX_ONLY)
    assert all((PACKAGE / "worker" / f"{half}.py").is_file() for half in HALVES)
    assert not any((PACKAGE / "worker" / f"{only}.py").exists() for only in SANDBOX_ONLY)


def test_no_two_modules_share_a_basename_but_the_two_halves_of_a_boundary():
    where = collections.defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            where[path.name].append(path.parent.relative_to(PACKAGE).as_posix())
    shared = {name: sorted(folders) for name, folders in where.items() if len(folders) > 1}
    assert shared == {f"{half}.py": ["sandbox", "worker"] for half in HALVES}


def test_the_isolation_level_is_one_enum_and_reads_as_its_plain_name():
    assert [level.value for level in ORDER] == ["rlimits", "uid+rlimits", "landlock", "uid+landlock", "userns",
                                                "namespaces"]  # weakest first
    # as --require-isolation lists them
    assert NAMES == ("namespaces", "userns", "uid+landlock", "landlock", "uid+rlimits", "rlimits")
    assert json.dumps({"isolation": Level.UID}) == '{"isolation": "uid+rlimits"}'  # the wire, results.json
    assert f"{Level.UID}, below the required {Level.NAMESPACES}" == "uid+rlimits, below the required namespaces"
    assert Level.UID == "uid+rlimits" and Level("rlimits") is Level.RLIMITS
    assert Level.NAMESPACES.at_least(Level.UID) and Level.UID.at_least("uid+rlimits")
    assert not Level.RLIMITS.at_least(Level.UID)
    assert Level.USERNS.at_least(Level.LANDLOCK) and not Level.LANDLOCK.at_least(Level.UID_LANDLOCK)
