"""Every entry handed in is graded, or named with its reason, once per hand-in: what discovery and staging make of
what an LMS hands over (tar archives, single files, notes, several hand-ins under one name, an empty folder named on
the command line, a broken notebook for all, near-miss file names), each beside a control.

Fast: ``discover`` and ``stage`` on small folders in ``tmp_path``, and the class list on their problems
(tests/system/test_deadline_day_hand_ins.py replays a whole class through the command line).
"""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from autograder.course import load_course
from autograder.grading.suites import problems
from autograder.intake import near_miss
from autograder.intake.discover import Source, discover
from autograder.intake.stage import stage
from autograder.pages import class_list

from .conftest import ROOT

COURSE = load_course(ROOT / "course.yml")
MODULES = COURSE.modules
ALICE = ROOT / "samples" / "submissions" / "alice"


@pytest.fixture
def staging(tmp_path) -> Path:
    path = tmp_path / "staging"
    path.mkdir()
    return path


def alice_folder(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for module in MODULES:
        (dest / f"{module}.py").write_bytes((ALICE / f"{module}.py").read_bytes())
    return dest


def tar_of(path: Path, members: list[tuple[str, bytes | None, bytes]], mode: str = "w:gz") -> Path:
    """``members``: (name, data, kind) with kind tarfile.REGTYPE, SYMTYPE (data: the link's target) or DIRTYPE."""
    with tarfile.open(path, mode) as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = data.decode()
                tar.addfile(info)
            elif kind == tarfile.DIRTYPE:
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def modules_of(prefix: str = "") -> list[tuple[str, bytes, bytes]]:
    return [(f"{prefix}{m}.py", (ALICE / f"{m}.py").read_bytes(), tarfile.REGTYPE) for m in MODULES]


# -- tar archives --------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix, mode", [(".tar.gz", "w:gz"), (".tgz", "w:gz"), (".tar", "w"), (".tar.bz2", "w:bz2"),
                                          (".tar.xz", "w:xz")])
def test_a_tar_archive_is_unpacked_as_a_zip_is(tmp_path, staging, suffix, mode):
    archive = tar_of(tmp_path / f"olga{suffix}", modules_of("handin/attention/"), mode)
    (source,), problems_ = discover([archive], MODULES)
    assert (source.name, problems_) == ("olga", [])
    staged = stage(source.path, source.name, staging, MODULES)
    assert staged.problem is None and staged.module_errors == {}
    assert sorted(p.name for p in staged.folder.iterdir()) == sorted(f"{m}.py" for m in MODULES)
    # the control: the same bytes, cut short, are a corrupt archive, named as such
    broken = tmp_path / f"cut{suffix}"
    broken.write_bytes(archive.read_bytes()[: len(archive.read_bytes()) // 2] if mode != "w" else b"not a tar at all")
    cut = stage(broken, "cut", staging, MODULES)
    assert cut.folder is None and cut.cause in ("corrupt", "no_modules", "empty_archive"), (cut.cause, cut.problem)


def test_a_tar_archive_keeps_to_the_zip_rules(tmp_path, staging):
    """No link, no path outside its folder; an empty one is named; its size is bounded as it is unpacked."""
    archive = tar_of(tmp_path / "mallory.tar.gz", [*modules_of(), ("evil.py", b"/etc/passwd", tarfile.SYMTYPE),
                                                    ("../outside.py", b"x = 1\n", tarfile.REGTYPE)])
    staged = stage(archive, "mallory", staging, MODULES)
    assert staged.problem is None
    assert any("evil.py" in n and "link" in n for n in staged.notes)
    assert any("outside.py" in n and "outside the archive" in n for n in staged.notes)
    assert not (staging.parent / "outside.py").exists()
    empty = tar_of(tmp_path / "eve.tgz", [])
    assert stage(empty, "eve", staging, MODULES).cause == "empty_archive"
    from autograder.intake import untar  # noqa: PLC0415 - its bound, made small for the test

    big = tar_of(tmp_path / "big.tar.gz", [("simple_attention.py", b"#" * 4096, tarfile.REGTYPE)])
    limit = untar.MAX_BYTES
    try:
        untar.MAX_BYTES = 1024
        assert stage(big, "big", staging, MODULES).cause == "too_large"
    finally:
        untar.MAX_BYTES = limit
    unpacked = stage(big, "big", staging, MODULES)  # the control: within the bound, unpacked and staged
    assert unpacked.folder is not None and (unpacked.folder / "simple_attention.py").read_bytes() == b"#" * 4096


def test_other_archives_and_files_are_named_not_graded(tmp_path, staging):
    (tmp_path / "pat.7z").write_bytes(b"7z\xbc\xaf'\x1c")
    (tmp_path / "quinn.txt").write_text("I could not finish, sorry")
    (tmp_path / "pete.py").write_bytes((ALICE / "causal_attention.py").read_bytes())
    (tmp_path / "empty.py").write_bytes(b"")
    sources, problems_ = discover([tmp_path / n for n in ("pat.7z", "quinn.txt", "pete.py", "empty.py")], MODULES)
    assert problems_ == []
    staged = {s.name: stage(s.path, s.name, staging, MODULES) for s in sources}
    assert {n: s.cause for n, s in staged.items()} == {"pat": "unsupported_archive", "quinn": "not_code",
                                                       "pete": "single_file", "empty": "empty_file"}
    assert "hand in a .zip" in staged["pat"].problem and "not your exercise code" in staged["quinn"].problem
    # the control: a single .py named after a module is that module, graded; the others are missing
    (tmp_path / "causal_attention.py").write_bytes((ALICE / "causal_attention.py").read_bytes())
    one = stage(tmp_path / "causal_attention.py", "rob", staging, MODULES)
    assert one.problem is None and "causal_attention" not in one.module_errors
    assert sorted(one.module_errors) == sorted(m for m in MODULES if m != "causal_attention")


# -- a folder of hand-ins --------------------------------------------------------------------------------
def test_every_entry_of_a_folder_of_hand_ins_is_one_hand_in(tmp_path):
    subs = tmp_path / "subs"
    alice_folder(subs / "alice")
    alice_folder(subs / "grace")
    (subs / "grace.txt").write_text("the notebook did not save, the .py files are the ones")  # a note beside it
    tar_of(subs / "olga.tar.gz", modules_of())
    (subs / "pete.py").write_text("x = 1\n")
    (subs / "quinn.txt").write_text("sorry")
    (subs / ".DS_Store").write_text("")
    (subs / "__MACOSX").mkdir()
    sources, problems_ = discover([subs], MODULES)
    assert problems_ == []
    assert [s.name for s in sources] == ["alice", "grace", "olga", "pete", "quinn"]  # each once
    grace = next(s for s in sources if s.name == "grace")
    assert grace == Source("grace", subs / "grace", (), (subs / "grace.txt",))


def test_an_empty_folder_named_on_the_command_line_is_a_hand_in(tmp_path, staging):
    subs = tmp_path / "subs"
    alice_folder(subs / "alice")
    (tmp_path / "late").mkdir()
    sources, problems_ = discover([subs, tmp_path / "late"], MODULES)
    assert problems_ == [] and [s.name for s in sources] == ["alice", "late"]
    assert stage(sources[1].path, "late", staging, MODULES).cause == "empty_folder"
    # the control: a path that is not there is no hand-in, and is said
    sources, problems_ = discover([subs, tmp_path / "nowhere"], MODULES)
    assert [s.name for s in sources] == ["alice"] and problems_ == [f"{tmp_path / 'nowhere'}: no such file or folder"]


def test_a_note_beside_a_hand_in_is_named_with_it_once(tmp_path, staging):
    subs = tmp_path / "subs"
    alice_folder(subs / "grace")
    (subs / "grace.txt").write_text("please read")
    (source,), _ = discover([subs], MODULES)
    staged = stage(source.path, source.name, staging, MODULES, others=source.others, beside=source.beside)
    assert staged.problem is None and staged.beside == ["grace.txt"]
    assert problems.beside(staged.beside) == [{"kind": "beside", "files": ["grace.txt"],
                                              "message": "handed in beside the code, not graded: grace.txt"}]
    rows, needs = class_list.build(COURSE, {"grace": {"score": 81,
                                                      "extra_data": {"problems": problems.beside(["grace.txt"])}},
                                            "alice": {"score": 81, "extra_data": {"problems": []}}})
    assert [(class_list.who(e), [r["category"] for r in e["reasons"]]) for e in needs] == [("grace", ["beside"])]


# -- a broken notebook, counted once -----------------------------------------------------------------------
def test_one_broken_notebook_for_every_module_is_one_hand_in_not_graded(tmp_path, staging):
    (tmp_path / "nina.ipynb").write_text('{"cells": [', encoding="utf-8")
    staged = stage(tmp_path / "nina.ipynb", "nina", staging, MODULES, COURSE.steps_by_module())
    assert (staged.folder, staged.cause) == (None, "broken_notebook")
    assert "not a valid notebook" in staged.problem
    # the control: a broken notebook of one module costs that module only
    folder = alice_folder(tmp_path / "nora")
    (folder / "trainable_attention.py").unlink()
    (folder / "trainable_attention.ipynb").write_text('{"cells": [', encoding="utf-8")
    one = stage(folder, "nora", staging, MODULES, COURSE.steps_by_module())
    assert one.problem is None and list(one.module_errors) == ["trainable_attention"]


def test_modules_not_graded_for_one_reason_are_said_once():
    same = {m: {"type": "MalformedNotebook", "message": "attention.ipynb is not a valid notebook"} for m in MODULES}
    found = problems.modules(same, COURSE.steps_by_module())
    rows, needs = class_list.build(COURSE, {"nina": {"score": 0, "extra_data": {"problems": found}}})
    (entry,) = needs
    assert len(entry["reasons"]) == 1
    assert entry["reasons"][0]["why"] == f"{', '.join(MODULES)}: broken notebook"
    assert f"({len(COURSE.steps)} step(s) score zero)" in entry["reasons"][0]["detail"]
    # the control: two modules not graded for two reasons stay two reasons
    two = problems.modules({"simple_attention": {"type": "UnreadableSource", "message": "not UTF-8",
                                                 "cause": "not_utf8"},
                            "causal_attention": {"type": "MalformedNotebook", "message": "broken"}},
                           COURSE.steps_by_module())
    rows, needs = class_list.build(COURSE, {"nina": {"score": 0, "extra_data": {"problems": two}}})
    assert len(needs[0]["reasons"]) == 2


# -- near misses, and the steps a missing module costs ---------------------------------------------------
@pytest.mark.parametrize("name", ["causal_attention (1).py", "causal_attention-1.py", "Causal_Attention.py",
                                  "causal_attention.py.txt", "casual_attention.py", "causal attention.py",
                                  "Copy of causal_attention.py"])
def test_a_near_miss_is_named_with_the_rename(tmp_path, staging, name):
    folder = alice_folder(tmp_path / "ren")
    (folder / "causal_attention.py").rename(folder / name)
    staged = stage(folder, "ren", staging, MODULES)
    message = staged.module_errors["causal_attention"]["message"]
    assert f"{name} is there: rename it to causal_attention.py" in message, message
    assert staged.module_errors["causal_attention"]["near_miss"] == name
    assert near_miss.find(folder, "causal_attention", MODULES) == name


def test_no_near_miss_where_there_is_none(tmp_path, staging):
    """The control: a helper file, or another module's own file, is never taken for the missing module."""
    folder = alice_folder(tmp_path / "ren")
    (folder / "causal_attention.py").unlink()
    (folder / "helpers.py").write_text("x = 1\n")
    (folder / "notes.txt").write_text("x")
    staged = stage(folder, "ren", staging, MODULES)
    assert "is there" not in staged.module_errors["causal_attention"]["message"]
    assert "near_miss" not in staged.module_errors["causal_attention"]
    assert near_miss.find(folder, "causal_attention", MODULES) is None


def test_a_missing_module_costs_the_steps_of_the_modules_that_import_it(tmp_path):
    folder = alice_folder(tmp_path / "ren")
    (folder / "causal_attention.py").unlink()
    importing = problems.importers(folder, MODULES)
    assert importing["causal_attention"] == {"multihead_attention"} and importing["simple_attention"] == set()
    by_module = COURSE.steps_by_module()
    blocked = {"causal_attention": [f"multihead_attention.{s}" for s in by_module["multihead_attention"]]}
    (found,) = problems.modules({"causal_attention": {"type": "MissingModule", "message": "missing"}}, by_module,
                                blocked)
    assert len(found["steps"]) == len(by_module["causal_attention"]) + len(by_module["multihead_attention"]) == 8
    rows, needs = class_list.build(COURSE, {"ren": {"score": 49, "extra_data": {"problems": [found]}}})
    assert "(8 step(s) score zero)" in needs[0]["reasons"][0]["detail"]
    # the control: a module nobody imports costs its own steps only
    (plain,) = problems.modules({"simple_attention": {"type": "MissingModule", "message": "missing"}}, by_module, {})
    assert len(plain["steps"]) == len(by_module["simple_attention"])


def test_results_json_keeps_what_the_class_list_reads(tmp_path):
    """The new problems are data of results.json's model: kinds, causes and files as the summary reads them."""
    from autograder.outputs.results import parse  # noqa: PLC0415 - the model, as its readers use it

    found = [*problems.not_graded("several_hand_ins", "2 hand-ins under one name"), *problems.beside(["a.txt"])]
    data = parse({"score": 0, "extra_data": {"problems": found}}).as_json()
    assert json.loads(json.dumps(data))["extra_data"]["problems"][1]["files"] == ["a.txt"]
    rows, needs = class_list.build(COURSE, {"x": data})
    assert [r["category"] for r in needs[0]["reasons"]] == ["not_graded", "beside"]
    assert needs[0]["reasons"][0]["why"] == "several hand-ins under one name"
