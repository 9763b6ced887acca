"""The process boundary drawn as two folders: ``worker/`` (what runs untrusted) and ``sandbox/`` (its trusted halves).

Read from the source, not run: nothing in ``worker/`` imports the rest of ``autograder`` (the zygote loads it as a
folder of its own, beside nothing of the instructor's); ``sandbox/`` imports ``worker/`` and nothing else of the
kit; each of its halves is named after its other half, and those pairs are the only basenames two modules share.
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
    assert NAMES == ("namespaces", "userns", "uid+landlock", "landlock", "uid+rlimits", "rlimits")  # as --require-isolation lists them
    assert json.dumps({"isolation": Level.UID}) == '{"isolation": "uid+rlimits"}'  # the wire, results.json
    assert f"{Level.UID}, below the required {Level.NAMESPACES}" == "uid+rlimits, below the required namespaces"
    assert Level.UID == "uid+rlimits" and Level("rlimits") is Level.RLIMITS
    assert Level.NAMESPACES.at_least(Level.UID) and Level.UID.at_least("uid+rlimits")
    assert not Level.RLIMITS.at_least(Level.UID)
    assert Level.USERNS.at_least(Level.LANDLOCK) and not Level.LANDLOCK.at_least(Level.UID_LANDLOCK)
