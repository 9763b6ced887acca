"""Intake: what students hand in (folders, .zip archives, notebooks) becomes a clean submission folder.

Fast: these call ``stage`` and ``discover`` directly on small folders built in ``tmp_path``; nothing is
graded and torch is not imported.
"""
from __future__ import annotations

import ast
import json
import os
import stat
import time
import zipfile
from pathlib import Path

import pytest

from autograder.course import load_course
from autograder.intake import notebook, notebook_effects, times
from autograder.intake.discover import Source, discover
from autograder.intake.stage import Staged, stage

from .conftest import ROOT

MODULES = load_course(ROOT / "course.yml").modules
SOLUTIONS = ROOT / "solutions"
ALICE = ROOT / "samples" / "submissions" / "alice"


# -- helpers -------------------------------------------------------------------------------------
def solution(module: str) -> str:
    return (SOLUTIONS / f"{module}.py").read_text(encoding="utf-8")


def write_modules(folder: Path, modules=MODULES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for module in modules:
        (folder / f"{module}.py").write_text(solution(module), encoding="utf-8")
    return folder


def make_zip(path: Path, entries: list[tuple], compression=zipfile.ZIP_DEFLATED) -> Path:
    """``entries``: (name, data) or (name, data, st_mode) written exactly as named (no sanitizing)."""
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data, *mode in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = compression
            if mode:
                info.external_attr = mode[0] << 16
            zf.writestr(info, data)
    return path


def module_entries(prefix: str = "") -> list[tuple[str, bytes]]:
    return [(f"{prefix}{m}.py", solution(m).encode()) for m in MODULES]


def make_notebook(path: Path, cells: list[tuple[str, str]]) -> Path:
    """An nbformat-4 notebook; sources stored as lists of lines, as Jupyter saves them."""
    def cell(kind, source):
        extra = {"outputs": [], "execution_count": None} if kind == "code" else {}
        return {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True), **extra}

    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3"}},
                                "cells": [cell(k, s) for k, s in cells]}, indent=1), encoding="utf-8")
    return path


def as_cells(source: str) -> list[str]:
    """Split a module at its top-level blank-line gaps, as a student pasting it into cells would."""
    return [chunk for chunk in source.split("\n\n\n") if chunk.strip()]


def same_code(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


@pytest.fixture
def staging(tmp_path) -> Path:
    path = tmp_path / "staging"
    path.mkdir()
    return path


def staged_files(staged: Staged) -> list[str]:
    return sorted(p.name for p in staged.folder.iterdir() if p.name != notebook_effects.FILE)  # the modules' files


def assert_all_modules_staged(staged: Staged) -> None:
    assert staged.problem is None, staged.problem
    assert staged.module_errors == {}
    assert staged_files(staged) == sorted(f"{m}.py" for m in MODULES)
    for module in MODULES:
        assert (staged.folder / f"{module}.py").read_text(encoding="utf-8") == solution(module)


# -- folders -------------------------------------------------------------------------------------
def test_a_folder_with_the_modules_at_its_top(tmp_path, staging):
    source = write_modules(tmp_path / "alice")
    (source / "notes.txt").write_text("my notes")
    (source / "helper.txt").write_text("not a module")
    staged = stage(source, "alice", staging, MODULES)
    assert staged.name == "alice" and staged.folder == staging / "alice"
    assert_all_modules_staged(staged)
    assert (source / "notes.txt").exists()  # the student's folder is left alone


@pytest.mark.parametrize("nesting", ["attention", "homework/attention"])
def test_a_folder_with_the_modules_nested_one_or_two_folders_deep(tmp_path, staging, nesting):
    source = tmp_path / "alice"
    write_modules(source / nesting)
    (source / "README.md").write_text("hello")
    staged = stage(source, "alice", staging, MODULES)
    assert_all_modules_staged(staged)


def test_staged_files_are_plain_readable_copies(tmp_path, staging):
    source = write_modules(tmp_path / "alice")
    os.chmod(source / "simple_attention.py", 0o600)
    staged = stage(source, "alice", staging, MODULES)
    for path in staged.folder.iterdir():
        assert path.is_file() and not path.is_symlink()
        assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_module_that_is_a_symbolic_link_is_not_followed(tmp_path, staging):
    secret = tmp_path / "secret.py"
    secret.write_text("SECRET = 'instructor only'\n")
    source = write_modules(tmp_path / "alice", MODULES[1:])
    (source / f"{MODULES[0]}.py").symlink_to(secret)
    staged = stage(source, "alice", staging, MODULES)
    assert staged.problem is None
    error = staged.module_errors[MODULES[0]]
    assert error["type"] == "SymbolicLink"
    assert f"{MODULES[0]}.py is a symbolic link" in error["message"]
    assert not (staged.folder / f"{MODULES[0]}.py").exists()
    assert "instructor only" not in "".join(p.read_text() for p in staged.folder.iterdir())
    assert set(staged.module_errors) == {MODULES[0]}  # the other modules are staged as usual


def test_a_nested_folder_that_is_a_symbolic_link_is_not_followed(tmp_path, staging):
    elsewhere = write_modules(tmp_path / "elsewhere")
    source = tmp_path / "alice"
    source.mkdir()
    (source / "attention").symlink_to(elsewhere, target_is_directory=True)
    staged = stage(source, "alice", staging, MODULES)
    assert staged.folder is None and "none of" in staged.problem


def test_a_module_that_is_not_utf8_names_the_line(tmp_path, staging):
    source = write_modules(tmp_path / "alice")
    (source / "causal_attention.py").write_bytes(b"import torch\n\n# r\xe9sum\xe9 in Latin-1\nX = 1\n")
    staged = stage(source, "alice", staging, MODULES)
    error = staged.module_errors["causal_attention"]
    assert error["type"] == "UnreadableSource"
    assert "causal_attention.py is not UTF-8" in error["message"]
    assert "line 3" in error["message"] and "0xe9" in error["message"]
    assert set(staged.module_errors) == {"causal_attention"}


def test_configuration_files_are_ignored_with_a_note(tmp_path, staging):
    source = write_modules(tmp_path / "alice")
    (source / "conftest.py").write_text("import os; os.system('touch /tmp/pwned')\n")
    (source / "sitecustomize.py").write_text("print('hijacked')\n")
    staged = stage(source, "alice", staging, MODULES)
    assert_all_modules_staged(staged)
    assert not (staged.folder / "conftest.py").exists() and not (staged.folder / "sitecustomize.py").exists()
    for name in ("conftest.py", "sitecustomize.py"):
        assert any(note.startswith(f"{name} was ignored") for note in staged.notes), staged.notes


def test_modules_in_two_folders_are_refused(tmp_path, staging):
    source = tmp_path / "alice"
    write_modules(source / "draft")
    write_modules(source / "final")
    staged = stage(source, "alice", staging, MODULES)
    assert staged.folder is None
    assert "several folders" in staged.problem
    assert "draft/" in staged.problem and "final/" in staged.problem


def test_a_folder_without_any_module(tmp_path, staging):
    source = tmp_path / "alice"
    source.mkdir()
    (source / "essay.txt").write_text("I did not do it")
    staged = stage(source, "alice", staging, MODULES)
    assert staged.folder is None
    assert f"{MODULES[0]}.py" in staged.problem


def test_a_missing_module_costs_only_that_module(tmp_path, staging):
    source = write_modules(tmp_path / "alice", MODULES[:-1])
    staged = stage(source, "alice", staging, MODULES)
    assert staged.problem is None
    assert staged.module_errors[MODULES[-1]]["type"] == "MissingModule"
    assert set(staged.module_errors) == {MODULES[-1]}


# -- zip archives --------------------------------------------------------------------------------
def test_a_zip_with_the_files_at_its_top(tmp_path, staging):
    archive = make_zip(tmp_path / "alice.zip", module_entries())
    staged = stage(archive, "alice", staging, MODULES)
    assert_all_modules_staged(staged)
    assert [p.name for p in staging.iterdir()] == ["alice"]  # the unpacked copy is gone


@pytest.mark.parametrize("prefix", ["alice/", "alice/attention/"])
def test_a_zip_with_the_files_nested_in_a_folder(tmp_path, staging, prefix):
    entries = [(prefix, b""), *module_entries(prefix), ("__MACOSX/._simple_attention.py", b"\0\5\26\7junk")]
    archive = make_zip(tmp_path / "alice.zip", entries)
    staged = stage(archive, "alice", staging, MODULES)
    assert_all_modules_staged(staged)


def test_a_zip_cannot_write_outside_its_folder(tmp_path, staging):
    outside = tmp_path / "outside"
    outside.mkdir()
    absolute = outside / "absolute_evil.py"
    archive = make_zip(tmp_path / "alice.zip", [
        *module_entries(), ("../evil.py", b"EVIL = 1\n"), ("../../evil2.py", b"EVIL = 2\n"),
        (str(absolute), b"EVIL = 3\n"), ("..\\windows_evil.py", b"EVIL = 4\n")])
    before = sorted(tmp_path.rglob("*"))
    staged = stage(archive, "alice", staging, MODULES)
    assert_all_modules_staged(staged)
    for name in ("../evil.py", "../../evil2.py", str(absolute)):
        assert any(repr(name) in note and "outside the archive's folder" in note for note in staged.notes), staged.notes
    assert not absolute.exists()
    assert not list(tmp_path.parent.glob("*evil*"))
    created = sorted(set(tmp_path.rglob("*")) - set(before))
    assert all(p.is_relative_to(staging / "alice") or p == staging / "alice" for p in created), created
    assert "EVIL" not in "".join(p.read_text() for p in staged.folder.iterdir())


def test_a_zip_symbolic_link_entry_is_left_out(tmp_path, staging):
    archive = make_zip(tmp_path / "alice.zip", [
        *module_entries()[1:], (f"{MODULES[0]}.py", "/etc/passwd", stat.S_IFLNK | 0o777)])
    staged = stage(archive, "alice", staging, MODULES)
    assert any(f"'{MODULES[0]}.py'" in note and "symbolic link" in note for note in staged.notes), staged.notes
    assert not (staged.folder / f"{MODULES[0]}.py").exists()
    assert staged.module_errors[MODULES[0]]["type"] == "MissingModule"
    assert staged.problem is None


def test_an_empty_zip_is_a_problem(tmp_path, staging):
    archive = tmp_path / "alice.zip"
    zipfile.ZipFile(archive, "w").close()
    staged = stage(archive, "alice", staging, MODULES)
    assert staged.folder is None and staged.problem == "alice.zip is empty"


def test_a_zip_of_unrelated_files_is_a_problem(tmp_path, staging):
    archive = make_zip(tmp_path / "alice.zip", [("report.pdf", b"%PDF-1.4")])
    staged = stage(archive, "alice", staging, MODULES)
    assert staged.folder is None
    assert staged.problem.startswith("alice.zip: none of ") and f"{MODULES[0]}.py" in staged.problem


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_a_corrupt_zip_is_a_problem(tmp_path, staging, how):
    archive = tmp_path / "alice.zip"
    if how == "garbage":
        archive.write_bytes(b"PK\x03\x04" + os.urandom(3000))
    else:
        good = make_zip(tmp_path / "good.zip", module_entries()).read_bytes()
        archive.write_bytes(good[: len(good) // 2])
    staged = stage(archive, "alice", staging, MODULES)
    assert staged.folder is None
    assert staged.problem == "alice.zip is not a valid .zip archive (it may be corrupt or truncated)"


@pytest.mark.parametrize("megabytes, message", [(60, "unpacks to more than 50 MB"), (10, "(a zip bomb?)")])
def test_a_zip_bomb_is_refused_without_unpacking(tmp_path, staging, megabytes, message):
    archive = make_zip(tmp_path / "alice.zip", [*module_entries(), ("data.py", b"\0" * (megabytes * 2**20))])
    assert archive.stat().st_size < 2**20
    start = time.monotonic()
    staged = stage(archive, "alice", staging, MODULES)
    assert time.monotonic() - start < 5
    assert staged.folder is None and message in staged.problem and "alice.zip" in staged.problem
    written = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())
    assert written < 2**20


def test_a_zip_with_too_many_entries_is_refused(tmp_path, staging):
    archive = make_zip(tmp_path / "alice.zip", [*module_entries(), *((f"junk/{i}.txt", b"") for i in range(2001))],
                       compression=zipfile.ZIP_STORED)
    staged = stage(archive, "alice", staging, MODULES)
    assert staged.folder is None and "entries" in staged.problem


# -- notebooks -----------------------------------------------------------------------------------
def module_notebook(path: Path, module: str) -> Path:
    cells = [("markdown", f"# {module}\nMy solution."), ("code", "%matplotlib inline\n!pip list")]
    for chunk in as_cells(solution(module)):
        cells += [("code", chunk), ("markdown", "Some explanation.")]
    return make_notebook(path, cells)


def test_a_module_notebook_becomes_the_module(tmp_path, staging):
    source = write_modules(tmp_path / "alice", MODULES[1:])
    module_notebook(source / f"{MODULES[0]}.ipynb", MODULES[0])
    staged = stage(source, "alice", staging, MODULES)
    assert staged.problem is None and staged.module_errors == {}
    text = (staged.folder / f"{MODULES[0]}.py").read_text(encoding="utf-8")
    # the code cells, in order, as the kernel runs them: IPython's lines are calls on get_ipython() (what they mean when
    # grading: worker/ipython_shell.py), each on its own line
    magics = "get_ipython().run_line_magic('matplotlib', 'inline')\nget_ipython().system('pip list')\n"
    assert magics in text
    assert same_code(text.replace(magics, ""), solution(MODULES[0]))
    assert f"not run when grading (the grader runs no shell command; your code ran without it): {MODULES[0]}.ipynb, " \
           "code cell 2: !pip list" in staged.notes
    assert "My solution." not in text and "Some explanation." not in text
    assert any(note == f"{MODULES[0]} was read from the code cells of {MODULES[0]}.ipynb" for note in staged.notes)
    assert not (staged.folder / f"{MODULES[0]}.ipynb").exists()


def test_a_notebook_handed_in_alone_becomes_the_module(tmp_path, staging):
    notebook = module_notebook(tmp_path / f"{MODULES[0]}.ipynb", MODULES[0])
    staged = stage(notebook, "alice", staging, MODULES)
    assert staged.problem is None
    text = (staged.folder / f"{MODULES[0]}.py").read_text(encoding="utf-8")
    magics = "get_ipython().run_line_magic('matplotlib', 'inline')\nget_ipython().system('pip list')\n"
    assert same_code(text.replace(magics, ""), solution(MODULES[0]))
    assert {e["type"] for e in staged.module_errors.values()} == {"MissingModule"}
    assert set(staged.module_errors) == set(MODULES[1:])


def test_one_notebook_with_every_module(tmp_path, staging):
    cells = [("code", "%load_ext autoreload\n%autoreload 2")]
    for module in MODULES:
        code = solution(module).replace("from .causal_attention import CausalAttention\n", "")
        cells += [("markdown", f"## {module}")] + [("code", chunk) for chunk in as_cells(code)]
    notebook = make_notebook(tmp_path / "attention.ipynb", cells)
    for source in (notebook, make_zip(tmp_path / "alice.zip", [("attention.ipynb", notebook.read_bytes())])):
        (staging / source.suffix[1:]).mkdir()
        staged = stage(source, "alice", staging / source.suffix[1:], MODULES)
        assert staged.problem is None and staged.module_errors == {}
        assert staged_files(staged) == sorted(f"{m}.py" for m in MODULES)
        for module in MODULES:
            text = (staged.folder / f"{module}.py").read_text(encoding="utf-8")
            compile(text, f"{module}.py", "exec")
            defined = {n.name for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            wanted = {n.name for n in ast.parse(solution(module)).body
                      if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            assert wanted <= defined
            assert f"{module} was read from the code cells of attention.ipynb" in staged.notes


@pytest.mark.parametrize("content, message", [
    ("{\"cells\": [", "is not a valid notebook: its JSON is broken at line 1"),
    ("{\"nbformat\": 4, \"metadata\": {}}", "is not a valid notebook: it has no list of cells"),
    ("[1, 2, 3]", "it has no list of cells"),
    (json.dumps({"nbformat": 4, "cells": [{"cell_type": "markdown", "source": "only words"}]}), "has no code cells"),
])
def test_a_malformed_notebook_costs_its_module_with_a_message(tmp_path, staging, content, message):
    source = write_modules(tmp_path / "alice", MODULES[1:])
    (source / f"{MODULES[0]}.ipynb").write_text(content, encoding="utf-8")
    staged = stage(source, "alice", staging, MODULES)
    assert staged.problem is None
    error = staged.module_errors[MODULES[0]]
    assert error["type"] == "MalformedNotebook"
    assert error["message"].startswith(f"{MODULES[0]}.ipynb") and message in error["message"]
    assert set(staged.module_errors) == {MODULES[0]}


def test_a_notebook_that_is_not_utf8(tmp_path, staging):
    source = write_modules(tmp_path / "alice", MODULES[1:])
    (source / f"{MODULES[0]}.ipynb").write_bytes(b'{"cells": [], "x": "\xff\xfe"}')
    staged = stage(source, "alice", staging, MODULES)
    error = staged.module_errors[MODULES[0]]
    assert error["type"] == "MalformedNotebook" and "not UTF-8" in error["message"]


def test_the_py_file_wins_over_a_notebook_of_the_same_module(tmp_path, staging):
    source = write_modules(tmp_path / "alice")
    make_notebook(source / f"{MODULES[0]}.ipynb", [("code", "raise SystemExit('old draft')")])
    staged = stage(source, "alice", staging, MODULES)
    assert_all_modules_staged(staged)
    assert not any("code cells" in note for note in staged.notes)


def test_a_stray_notebook_does_not_hide_the_modules_in_a_subfolder(tmp_path, staging):
    # Jupyter leaves an Untitled.ipynb next to the student's project folder: the modules in attention/
    # are what was handed in, not the scratch notebook's cells.
    source = tmp_path / "alice"
    write_modules(source / "attention")
    make_notebook(source / "Untitled.ipynb", [("code", "print('scratch')")])
    staged = stage(source, "alice", staging, MODULES)
    assert staged.problem is None
    assert_all_modules_staged(staged)


# -- when it was handed in -----------------------------------------------------------------------
def test_the_lms_times_file_is_read_with_offsets(tmp_path):
    path = tmp_path / "times.csv"
    path.write_text("submission,submitted_at\nalice,2026-12-10 14:03:22.123456 UTC\nbob,2026-12-11T09:00:00+01:00\n")
    assert times.read(path) == {"alice": "2026-12-10T14:03:22.123456+00:00", "bob": "2026-12-11T09:00:00+01:00"}


@pytest.mark.parametrize("text, where", [("name,time\nalice,2026-12-10T14:03:22+00:00\n", "line 1"),
                                         ("submission,submitted_at\nalice,yesterday\n", "line 2"),
                                         ("submission,submitted_at\nalice,2026-12-10T14:03:22\n", "line 2")])
def test_a_broken_times_file_says_where(tmp_path, text, where):
    path = tmp_path / "times.csv"
    path.write_text(text)
    with pytest.raises(times.TimesError, match=where):
        times.read(path)


def test_nbgraders_collected_timestamp_is_understood(tmp_path):
    # nbgrader writes timestamp.txt with its default timestamp_format "%Y-%m-%d %H:%M:%S.%f %Z".
    (tmp_path / "timestamp.txt").write_text("2026-12-10 14:03:22.123456 UTC")
    assert times.nbgrader_stamp(tmp_path) == "2026-12-10T14:03:22.123456+00:00"


# -- discover ------------------------------------------------------------------------------------
def test_discover_a_folder_of_submissions(tmp_path):
    subs = tmp_path / "subs"
    write_modules(subs / "alice")
    write_modules(subs / "dan" / "attention")
    make_zip(subs / "bob.zip", module_entries())
    module_notebook(subs / "carol.ipynb", MODULES[0])
    (subs / "eve").mkdir()  # empty: still a submission (it gets a results.json saying why it scored 0)
    (subs / "roster.csv").write_text("name\n")
    (subs / ".DS_Store").write_text("")
    write_modules(subs / ".hidden")
    write_modules(subs / "__pycache__")
    sources, problems = discover([subs], MODULES)
    assert problems == []
    # every entry handed in is a hand-in, graded or named: roster.csv too (not code: named, not graded)
    assert sources == [Source("alice", subs / "alice"), Source("bob", subs / "bob.zip"),
                       Source("carol", subs / "carol.ipynb"), Source("dan", subs / "dan"),
                       Source("eve", subs / "eve"), Source("roster", subs / "roster.csv")]


def test_discover_single_submissions_named_on_the_command_line(tmp_path, monkeypatch):
    alice = write_modules(tmp_path / "alice")
    bob = make_zip(tmp_path / "bob.ZIP", module_entries())
    monkeypatch.chdir(tmp_path)
    sources, problems = discover([Path("alice"), Path("bob.ZIP")], MODULES)
    assert problems == []
    assert sources == [Source("alice", alice), Source("bob", bob)]
    assert all(s.path.is_absolute() for s in sources)


def test_discover_names_only_a_path_that_does_not_exist(tmp_path, staging):
    """A note and an empty folder named on the command line are hand-ins (named, not graded, with their reason);
    only a path that is not there is a line of its own."""
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    sources, problems = discover([tmp_path / "missing", tmp_path / "notes.txt", tmp_path / "empty"], MODULES)
    assert sources == [Source("empty", tmp_path / "empty"), Source("notes", tmp_path / "notes.txt")]
    assert problems == [f"{tmp_path / 'missing'}: no such file or folder"]
    staged = {s.name: stage(s.path, s.name, staging, MODULES) for s in sources}
    assert (staged["empty"].folder, staged["empty"].cause) == (None, "empty_folder")
    assert (staged["notes"].folder, staged["notes"].cause) == (None, "not_code")


def test_two_hand_ins_with_the_same_name_are_one_hand_in_not_graded(tmp_path, staging):
    subs = tmp_path / "subs"
    write_modules(subs / "alice")
    make_zip(subs / "alice.zip", module_entries())
    write_modules(subs / "bob")
    sources, problems = discover([subs], MODULES)
    assert problems == []
    assert sources == [Source("alice", subs / "alice", (subs / "alice.zip",)), Source("bob", subs / "bob")]
    alice = stage(sources[0].path, "alice", staging, MODULES, others=sources[0].others)
    assert (alice.folder, alice.cause) == (None, "several_hand_ins")
    assert "alice/" in alice.problem and "alice.zip" in alice.problem and "decides which one counts" in alice.problem


def test_discover_then_stage_every_kind(tmp_path, staging):
    subs = tmp_path / "subs"
    write_modules(subs / "alice")
    make_zip(subs / "bob.zip", module_entries("bob/"))
    module_notebook(subs / "carol.ipynb", MODULES[0])
    sources, _ = discover([subs], MODULES)
    staged = {s.name: stage(s.path, s.name, staging, MODULES) for s in sources}
    assert_all_modules_staged(staged["alice"])
    assert_all_modules_staged(staged["bob"])
    # a notebook not named after a module supplies every module: here, all get carol's cells
    assert staged["carol"].problem is None and staged["carol"].module_errors == {}
    assert sorted(p.name for p in staging.iterdir()) == ["alice", "bob", "carol"]


# -- one notebook for every module ---------------------------------------------------------------
STEPS = {"simple_attention": ["attention_scores", "context_vector"],
         "trainable_attention": ["init_qkv", "context_vector"]}


def _nb(path, cells):
    path.write_text(json.dumps({"cells": [{"cell_type": k, "metadata": {}, "source": s,
                                           **({"outputs": [], "execution_count": None} if k == "code" else {})}
                                          for k, s in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_one_notebook_is_split_by_its_headings(tmp_path):
    path = _nb(tmp_path / "all.ipynb", [
        ("code", "import torch"),
        ("markdown", "# Part 1: simple_attention"),
        ("code", "def attention_scores(x, q):\n    return x @ q"),
        ("code", "def context_vector(x, w):\n    return 'simple'"),
        ("markdown", "# trainable_attention"),
        ("code", "def context_vector(w, v):\n    return 'trainable'"),
    ])
    sources, notes = notebook.split(path, STEPS)
    assert notes == []
    assert "'simple'" in sources["simple_attention"] and "'trainable'" not in sources["simple_attention"]
    assert "'trainable'" in sources["trainable_attention"] and "'simple'" not in sources["trainable_attention"]
    assert all("import torch" in s for s in sources.values())


def test_one_notebook_without_headings_follows_its_order(tmp_path):
    path = _nb(tmp_path / "all.ipynb", [
        ("code", "def attention_scores(x, q):\n    return x @ q"),
        ("code", "def context_vector(x, w):\n    return 'simple'"),
        ("code", "def init_qkv(d_in, d_out):\n    return 1"),
        ("code", "def context_vector(w, v):\n    return 'trainable'"),
    ])
    sources, notes = notebook.split(path, STEPS)
    assert notes == []
    assert "'trainable'" not in sources["simple_attention"] and "'simple'" not in sources["trainable_attention"]


def test_a_name_the_notebook_cannot_place_is_said_with_its_cell(tmp_path):
    path = _nb(tmp_path / "all.ipynb", [("code", "import torch"),
                                        ("code", "def context_vector(x, w):\n    return 1")])
    _, notes = notebook.split(path, STEPS)
    assert len(notes) == 1 and "code cell 2" in notes[0] and "context_vector" in notes[0] and "heading" in notes[0]
