"""Staging is bounded and per submission: every hand-in's size is checked before it is read, and whatever
stops one hand-in from staging is that submission's problem, named under "needs a person", while the class
goes on (autograder/intake/hand_in_sizes.py, autograder/intake/stage.py).

Each limit (notebook, source, archive, folder) is shown with its control just below it, at the kit's real
limits (large files are sparse or written once in ``tmp_path``). The memory the trusted process keeps is
shown twice: staging a 60 MB notebook in a process of its own, with the limit and with it lifted (the old
path, which read it whole); and the whole of ``grade autograde`` on a class with a 200 MB notebook beside
a correct submission and a notebook at the limit, against the same class without the big one.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from autograder.check import intake as check_intake
from autograder.course import load_course
from autograder.intake import hand_in_sizes, notebook, stage as stage_module, unzip
from autograder.intake.stage import IGNORED_DIRS, stage
from autograder.pages import class_list

from .conftest import ROOT

COURSE = load_course(ROOT / "course.yml")
MODULES = COURSE.modules
STEPS = COURSE.steps_by_module()
SOLUTIONS = ROOT / "solutions"


# -- helpers -------------------------------------------------------------------------------------
def solution(module: str) -> str:
    return (SOLUTIONS / f"{module}.py").read_text(encoding="utf-8")


def write_modules(folder: Path, modules=MODULES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for module in modules:
        (folder / f"{module}.py").write_text(solution(module), encoding="utf-8")
    return folder


def every_module_cells() -> list[dict]:
    """One notebook for every module, each after a heading naming it (as a student pastes the solutions)."""
    cells = []
    for module in MODULES:
        code = solution(module).replace("from .causal_attention import CausalAttention\n", "")
        cells += [{"cell_type": "markdown", "metadata": {}, "source": [f"## {module}"]},
                  {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": code.splitlines(keepends=True)}]
    return cells


def padded_notebook(path: Path, size: int, cells: list[dict] | None = None) -> Path:
    """A valid notebook of exactly ``size`` bytes: ``cells`` (every module's, by default), and its metadata
    padded with one long string, written a megabyte at a time (a 200 MB one is never held here)."""
    nb = {"cells": every_module_cells() if cells is None else cells,
          "metadata": {"kernelspec": {"name": "python3"}, "padding": "@PAD@"}, "nbformat": 4, "nbformat_minor": 5}
    head, tail = (part.encode() for part in json.dumps(nb, indent=1).split("@PAD@"))
    room = size - len(head) - len(tail)
    assert room >= 0
    with path.open("wb") as f:
        f.write(head)
        while room:
            n = min(room, hand_in_sizes.MB)
            f.write(b"x" * n)
            room -= n
        f.write(tail)
    assert path.stat().st_size == size
    return path


def module_entries() -> list[tuple[str, bytes]]:
    return [(f"{m}.py", solution(m).encode()) for m in MODULES]


def zip_bytes(entries: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
    return out.getvalue()


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no room on disk (a hole)."""
    with path.open("wb") as f:
        f.truncate(size)
    return path


@pytest.fixture
def staging(tmp_path) -> Path:
    path = tmp_path / "staging"
    path.mkdir()
    return path


def assert_all_modules_staged(staged) -> None:
    assert staged.problem is None, staged.problem
    assert staged.module_errors == {}, staged.module_errors
    assert sorted(p.name for p in staged.folder.iterdir() if p.suffix == ".py") == sorted(f"{m}.py" for m in MODULES)


def assert_not_read(monkeypatch) -> list:
    """Record every notebook parse (``json.loads`` in the intake): a refused notebook must cause none."""
    parsed = []
    real = notebook.json.loads

    def loads(text, *args, **kwargs):
        parsed.append(len(text))
        return real(text, *args, **kwargs)

    monkeypatch.setattr(notebook.json, "loads", loads)
    return parsed


# -- notebooks -----------------------------------------------------------------------------------
@pytest.mark.unit
def test_a_notebook_over_its_limit_is_refused_before_it_is_read_and_one_at_the_limit_is_graded(tmp_path, staging,
                                                                                             monkeypatch):
    parsed = assert_not_read(monkeypatch)
    over = padded_notebook(tmp_path / "over.ipynb", hand_in_sizes.MAX_NOTEBOOK + 1)
    staged = stage(over, "over", staging, MODULES, STEPS)
    assert staged.folder is None and staged.cause == "notebook_too_large"
    assert staged.problem == ("over.ipynb is 10.0 MB; notebooks over 10 MB are not graded: clear its outputs "
                              "(in Jupyter: Edit > Clear Outputs of All Cells), save it and hand it in again")
    assert parsed == [] and list(staging.iterdir()) == []  # not parsed, not even copied

    at_limit = padded_notebook(tmp_path / "at_limit.ipynb", hand_in_sizes.MAX_NOTEBOOK)  # the control
    assert_all_modules_staged(stage(at_limit, "at_limit", staging, MODULES, STEPS))
    assert len(parsed) == 1  # read once for every module


@pytest.mark.unit
def test_a_notebook_with_plots_is_far_below_the_limit(tmp_path, staging):
    """The bundle's notebooks are 7-10 KB; with twenty plots of the size matplotlib saves at twice the screen's
    resolution (48 KB of PNG each) a student's is about 1.3 MB, an eighth of the limit, and is graded."""
    cells = every_module_cells()
    plot = {"output_type": "display_data", "metadata": {},
            "data": {"image/png": "iVBORw0KGgo" + "A" * (64 * 1024),
                     "text/plain": ["<Figure size 600x400 with 2 Axes>"]}}
    for cell in [c for c in cells if c["cell_type"] == "code"]:
        cell["outputs"] = [plot] * 5
    path = tmp_path / "attention.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    assert hand_in_sizes.MB < path.stat().st_size < hand_in_sizes.MAX_NOTEBOOK / 7
    assert_all_modules_staged(stage(path, "alice", staging, MODULES, STEPS))


@pytest.mark.unit
def test_a_notebook_over_its_limit_in_a_folder_costs_its_module_or_the_submission(tmp_path, staging):
    folder = write_modules(tmp_path / "bob", MODULES[1:])
    padded_notebook(folder / f"{MODULES[0]}.ipynb", hand_in_sizes.MAX_NOTEBOOK + 1)
    staged = stage(folder, "bob", staging, MODULES, STEPS)
    assert staged.problem is None and list(staged.module_errors) == [MODULES[0]]
    error = staged.module_errors[MODULES[0]]
    assert error["cause"] == "too_large" and "notebooks over 10 MB are not graded" in error["message"]
    assert sorted(p.name for p in staged.folder.iterdir() if p.suffix == ".py") == sorted(
        f"{m}.py" for m in MODULES[1:])

    only = tmp_path / "carol"  # one notebook for every module, over its limit: nothing to grade, said once
    only.mkdir()
    padded_notebook(only / "attention.ipynb", hand_in_sizes.MAX_NOTEBOOK + 1)
    staged = stage(only, "carol", staging, MODULES, STEPS)
    assert staged.folder is None and staged.cause == "notebook_too_large"
    assert staged.problem.startswith("attention.ipynb is 10.0 MB; notebooks over 10 MB are not graded")


@pytest.mark.unit
def test_a_notebook_inside_a_zip_is_held_to_the_same_limit(tmp_path, staging):
    data = padded_notebook(tmp_path / "attention.ipynb", hand_in_sizes.MAX_NOTEBOOK + 1).read_bytes()
    archive = tmp_path / "dave.zip"
    archive.write_bytes(zip_bytes([("attention.ipynb", data)]))
    staged = stage(archive, "dave", staging, MODULES, STEPS)
    assert staged.cause == "notebook_too_large" and "notebooks over 10 MB are not graded" in staged.problem


@pytest.mark.unit
@pytest.mark.parametrize("padding, words", [("[" * 100_000 + "]" * 100_000, "nested too deeply"),
                                            ("1" * 5000, "a number too long to read")])
def test_a_notebook_python_cannot_parse_costs_its_module_not_the_batch(tmp_path, staging, padding, words):
    folder = write_modules(tmp_path / "erin", MODULES[1:])
    (folder / f"{MODULES[0]}.ipynb").write_text('{"cells": [], "metadata": {"x": ' + padding + "}}")
    staged = stage(folder, "erin", staging, MODULES, STEPS)
    assert staged.problem is None
    assert staged.module_errors[MODULES[0]]["type"] == "MalformedNotebook"
    assert words in staged.module_errors[MODULES[0]]["message"]


# -- source files --------------------------------------------------------------------------------
@pytest.mark.unit
def test_a_source_file_over_its_limit_is_refused_and_one_at_the_limit_is_graded(tmp_path, staging):
    def padded_source(module: str, size: int) -> str:
        text = solution(module) + "\n# "
        return text + "x" * (size - len(text.encode()) - 1) + "\n"

    folder = write_modules(tmp_path / "frank", MODULES[1:])
    (folder / f"{MODULES[0]}.py").write_text(padded_source(MODULES[0], hand_in_sizes.MAX_SOURCE + 1))
    staged = stage(folder, "frank", staging, MODULES, STEPS)
    assert staged.module_errors[MODULES[0]]["cause"] == "too_large"
    assert staged.module_errors[MODULES[0]]["message"] == \
        f"{MODULES[0]}.py is 2048 KB; source files over 2048 KB are not graded"

    (folder / f"{MODULES[0]}.py").write_text(padded_source(MODULES[0], hand_in_sizes.MAX_SOURCE))  # the control
    assert_all_modules_staged(stage(folder, "frank2", staging, MODULES, STEPS))


@pytest.mark.unit
def test_the_code_a_notebook_gives_a_module_is_held_to_the_source_limit(tmp_path, staging):
    cells = every_module_cells()
    cells[1]["source"].append("\n# " + "x" * hand_in_sizes.MAX_SOURCE + "\n")  # the first module's code, over 2 MB
    path = tmp_path / "attention.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    staged = stage(path, "gina", staging, MODULES, STEPS)
    assert staged.problem is None and list(staged.module_errors) == [MODULES[0]]
    assert staged.module_errors[MODULES[0]]["cause"] == "too_large"
    assert "source files over 2048 KB are not graded" in staged.module_errors[MODULES[0]]["message"]


# -- archives ------------------------------------------------------------------------------------
@pytest.mark.unit
def test_an_archive_over_its_limit_is_refused_before_it_is_opened_and_one_at_the_limit_is_graded(
        tmp_path, staging, monkeypatch):
    data = zip_bytes(module_entries())
    opened = []
    real = zipfile.ZipFile
    monkeypatch.setattr(unzip.zipfile, "ZipFile", lambda *a, **k: opened.append(a) or real(*a, **k))
    over = tmp_path / "hana.zip"  # a valid archive after more than 51 MB of anything (a hole here)
    with over.open("wb") as f:
        f.truncate(hand_in_sizes.MAX_ARCHIVE + 1 - len(data))
        f.seek(0, os.SEEK_END)
        f.write(data)
    staged = stage(over, "hana", staging, MODULES, STEPS)
    assert staged.folder is None and staged.cause == "archive_too_large" and opened == []
    assert staged.problem == ("hana.zip is 51.0 MB; .zip archives over 51 MB are not graded: hand in only your "
                              "exercise files")

    at_limit = tmp_path / "hana2.zip"  # the control: the same archive, one byte less before it
    with at_limit.open("wb") as f:
        f.truncate(hand_in_sizes.MAX_ARCHIVE - len(data))
        f.seek(0, os.SEEK_END)
        f.write(data)
    assert at_limit.stat().st_size == hand_in_sizes.MAX_ARCHIVE
    assert_all_modules_staged(stage(at_limit, "hana2", staging, MODULES, STEPS))
    assert len(opened) == 1


@pytest.mark.unit
def test_an_archive_whose_list_of_entries_is_over_its_limit_is_refused_before_zipfile_reads_it(tmp_path, staging):
    """zipfile turns an archive's whole list of entries into objects as it opens it: a 50 MB list of empty
    entries took 316 MB. The list's size is read from the archive's end record first."""
    name = "/".join(["d" * 190] * 3)  # 572 bytes: 1800 such entries make a list of 1.1 MB, 1500 of 0.9 MB
    for count, refused in ((1800, True), (1500, False)):
        archive = tmp_path / f"ivan{count}.zip"
        archive.write_bytes(zip_bytes([*module_entries(), *((f"{name}/{i}.txt", b"") for i in range(count))]))
        staged = stage(archive, f"ivan{count}", staging, MODULES, STEPS)
        if refused:
            assert staged.cause == "too_many_entries"
            assert (staged.problem.startswith(f"ivan{count}.zip's list of entries is 1.")
                    and "at most 1 MB" in staged.problem)
        else:
            assert_all_modules_staged(staged)


# -- folders -------------------------------------------------------------------------------------
@pytest.mark.unit
def test_a_folder_over_its_size_is_refused_and_one_at_it_is_graded(tmp_path, staging):
    folder = write_modules(tmp_path / "jack")
    used = sum(p.stat().st_size for p in folder.iterdir())
    sparse(folder / "data.bin", hand_in_sizes.MAX_UNPACKED - used + 1)
    staged = stage(folder, "jack", staging, MODULES, STEPS)
    assert staged.folder is None and staged.cause == "folder_too_large"
    assert staged.problem == "jack/ holds more than 50 MB of files; hand in only your exercise files"

    sparse(folder / "data.bin", hand_in_sizes.MAX_UNPACKED - used)  # the control
    assert_all_modules_staged(stage(folder, "jack", staging, MODULES, STEPS))


@pytest.mark.unit
def test_a_folder_of_too_many_files_is_refused_and_one_at_the_limit_is_graded(tmp_path, staging):
    folder = write_modules(tmp_path / "kim")
    (folder / ".git").mkdir()  # counted, but not what is in it: staging never looks there
    for i in range(3000):
        (folder / ".git" / f"{i}").touch()
    extra = folder / "extra"
    extra.mkdir()
    # the modules, .git/, extra/ and its files: 2000 entries
    for i in range(hand_in_sizes.MAX_ENTRIES - len(MODULES) - 2):
        (extra / f"{i}.txt").touch()
    assert_all_modules_staged(stage(folder, "kim", staging, MODULES, STEPS))  # the control

    (extra / "one_more.txt").touch()
    staged = stage(folder, "kim2", staging, MODULES, STEPS)
    assert staged.folder is None and staged.cause == "too_many_files"
    assert staged.problem == "kim/ holds more than 2000 files and folders; hand in only your exercise files"


@pytest.mark.unit
def test_the_folder_walk_stops_at_the_limit_whatever_the_folder_holds(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(3000):
        (folder / f"{i}").touch()
    seen = []
    real = os.scandir

    class Counted:
        def __init__(self, path):
            self.inner = real(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.inner.close()

        def __iter__(self):
            for entry in self.inner:
                seen.append(entry.name)
                yield entry

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hand_in_sizes.os, "scandir", Counted)
        with pytest.raises(hand_in_sizes.TooLarge):
            hand_in_sizes.check_folder(folder, "many", IGNORED_DIRS)
    assert len(seen) == hand_in_sizes.MAX_ENTRIES + 1


# -- nbgrader's timestamp.txt, read before staging ---------------------------------------------------
@pytest.mark.unit
def test_a_timestamp_file_over_its_limit_is_not_read(tmp_path, monkeypatch):
    from autograder.intake import times  # noqa: PLC0415 - the one reader of nbgrader's timestamp.txt

    stamp = "2026-12-10 14:03:22.123456 UTC"
    (tmp_path / "timestamp.txt").write_text(stamp.ljust(times.MAX_STAMP))  # the control, at the limit
    assert times.nbgrader_stamp(tmp_path) == "2026-12-10T14:03:22.123456+00:00"
    sparse(tmp_path / "timestamp.txt", 2**40)  # a terabyte that takes no room
    monkeypatch.setattr(times, "parse", lambda text: pytest.fail("read"))
    assert times.nbgrader_stamp(tmp_path) is None


@pytest.mark.unit
def test_nbgraders_feedback_never_reads_a_notebook_over_the_limit(tmp_path, monkeypatch):
    from autograder.nbgrader_course import autograded  # noqa: PLC0415 - nbgrader's side of the kit

    cell = {"cell_type": "code", "execution_count": None, "outputs": [], "source": ["x = 1\n"],
            "metadata": {"nbgrader": {"grade_id": "answer", "solution": True, "grade": False, "locked": False}}}
    at_limit = padded_notebook(tmp_path / "at_limit.ipynb", hand_in_sizes.MAX_NOTEBOOK, [cell])  # the control
    assert autograded.solution_sources(at_limit) == {"answer": "x = 1\n"}
    over = padded_notebook(tmp_path / "over.ipynb", hand_in_sizes.MAX_NOTEBOOK + 1, [cell])
    monkeypatch.setattr(autograded.json, "loads", lambda *a, **k: pytest.fail("parsed"))
    assert autograded.solution_sources(over) == {}


# -- anything else: the submission's problem, never the batch's --------------------------------------
@pytest.mark.unit
def test_a_failure_of_the_kits_own_is_the_submissions_problem_with_its_traceback_kept(tmp_path, staging, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug of the kit's, with a student's words in it: <script>")

    monkeypatch.setattr(stage_module, "copy_modules", broken)
    staged = stage(write_modules(tmp_path / "lena"), "lena", staging, MODULES, STEPS)
    assert staged.folder is None and staged.cause == "staging_error"
    assert staged.problem == ("lena could not be staged: the grader itself failed on it (its error, not the "
                              "hand-in's); your instructor has the details")
    assert "RuntimeError: a bug of the kit's" in staged.kit_error and "copy_modules" not in staged.problem
    assert list(staging.iterdir()) == []  # nothing half-staged left behind


@pytest.mark.unit
def test_a_hand_in_that_cannot_be_read_is_the_submissions_problem(tmp_path, staging, monkeypatch):
    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(stage_module, "find_root", unreadable)
    staged = stage(write_modules(tmp_path / "mona"), "mona", staging, MODULES, STEPS)
    assert (staged.cause, staged.problem, staged.kit_error) == ("unreadable",
                                                                "mona cannot be read (Permission denied)", None)


@pytest.mark.unit
def test_the_batch_stages_the_others_after_one_fails(tmp_path, staging, monkeypatch):
    from autograder.autograde import batch  # noqa: PLC0415 - the batch's own staging loop
    from autograder.intake.discover import Source  # noqa: PLC0415 - as the batch, imported where it is used

    real = stage_module.copy_modules

    def fails_for_nina(root, dest, *args, **kwargs):
        if dest.name == "nina":
            raise MemoryError
        return real(root, dest, *args, **kwargs)

    monkeypatch.setattr(stage_module, "copy_modules", fails_for_nina)
    sources = [Source(n, write_modules(tmp_path / n)) for n in ("mark", "nina", "olga")]
    todo, done = batch.prepare(sources, staging, MODULES, tmp_path / "out", "grader", False, steps=STEPS)
    assert [(j.source.name, j.staged.cause) for j in todo] == [("mark", None), ("nina", "staging_error"),
                                                               ("olga", None)]
    assert "MemoryError" in todo[1].staged.kit_error and done == []


# -- grade check: the same limits, the same words ------------------------------------------------------
@pytest.mark.unit
def test_grade_check_refuses_what_grade_autograde_refuses_in_its_words(tmp_path, staging):
    big = padded_notebook(tmp_path / f"{MODULES[0]}.ipynb", hand_in_sizes.MAX_NOTEBOOK + 1)
    with pytest.raises(ValueError) as refused:
        check_intake.prepare(big, MODULES, list(COURSE.steps))
    assert str(refused.value) == stage(big, "x", staging, MODULES, STEPS).problem

    folder = write_modules(tmp_path / "exercises")
    assert not check_intake.needs_staging(folder, MODULES)  # the control: checked where it is
    sparse(folder / "data.bin", hand_in_sizes.MAX_UNPACKED + 1)
    assert check_intake.needs_staging(folder, MODULES)
    with pytest.raises(ValueError) as refused:
        check_intake.prepare(folder, MODULES, list(COURSE.steps))
    assert str(refused.value) == "exercises/ holds more than 50 MB of files; hand in only your exercise files"


@pytest.mark.unit
def test_the_class_list_names_each_limit_with_its_size():
    why = {cause: class_list.reason({"kind": "not_graded", "cause": cause})["why"]
           for cause in ("notebook_too_large", "archive_too_large", "folder_too_large", "too_many_files", "too_large")}
    assert why == {"notebook_too_large": "notebook over 10 MB", "archive_too_large": "zip over 51 MB",
                   "folder_too_large": "folder over 50 MB", "too_many_files": "folder of over 2000 files and folders",
                   "too_large": "zip unpacking to over 50 MB"}


# -- the trusted process's memory ------------------------------------------------------------------
#: VmHWM, this process's own peak (ru_maxrss would start from the parent's: it is kept across exec)
STAGE_AND_MEASURE = """
import json, re, sys
from pathlib import Path
from autograder.intake import hand_in_sizes
from autograder.intake.stage import stage
def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1))
if sys.argv[2] == "lifted":
    hand_in_sizes.MAX_NOTEBOOK = 2**40
before = peak()
staged = stage(Path(sys.argv[1]), "big", Path(sys.argv[4]), json.loads(sys.argv[3]))
print(json.dumps({"grown_mib": (peak() - before) / 1024, "cause": staged.cause}))
"""


def staged_in_a_process_of_its_own(path: Path, how: str = "limited") -> dict:
    """Stage ``path`` in a child process and say how much its peak memory grew; what it staged (up to the notebook's
    size again) is removed, as is everything of the test's in /tmp."""
    staging = Path(tempfile.mkdtemp(prefix=f"staged-{how}-", dir=path.parent))
    try:
        run = subprocess.run([sys.executable, "-c", STAGE_AND_MEASURE, str(path), how, json.dumps(MODULES),
                              str(staging)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


@pytest.mark.unit
def test_the_worst_notebook_at_the_limit_takes_a_bounded_parse(tmp_path):
    """A notebook of empty lists takes about 25 times its size once parsed: at the limit, 260 MB (measured), not
    the 5.3 GB a 200 MB one took. Its control, the same size of one long string, takes 3 times its size."""
    worst = tmp_path / "worst.ipynb"
    head = '{"cells": [], "metadata": {"pad": ['
    with worst.open("w") as f:
        f.write(head + "[]," * ((hand_in_sizes.MAX_NOTEBOOK - len(head) - 8) // 3) + "[]]}}")
    assert hand_in_sizes.MAX_NOTEBOOK - 8 < worst.stat().st_size <= hand_in_sizes.MAX_NOTEBOOK
    string = padded_notebook(tmp_path / "string.ipynb", hand_in_sizes.MAX_NOTEBOOK)
    grown = {"worst": staged_in_a_process_of_its_own(worst), "string": staged_in_a_process_of_its_own(string)}
    assert grown["string"]["cause"] is None, grown  # read and staged (the worst has no code cells: read, refused)
    assert 150 < grown["worst"]["grown_mib"] < 400 and grown["string"]["grown_mib"] < 60, grown


@pytest.mark.unit
def test_staging_a_60_mb_notebook_keeps_the_memory_it_would_have_taken(tmp_path):
    """The control: with the limit lifted (the old path), staging reads the notebook whole and the process
    grows by more than the file; with it, by almost nothing."""
    big = padded_notebook(tmp_path / "big.ipynb", 60 * hand_in_sizes.MB)
    grown = {how: staged_in_a_process_of_its_own(big, how) for how in ("limited", "lifted")}
    big.unlink()  # pytest keeps the last runs' folders
    assert grown["limited"]["cause"] == "notebook_too_large" and grown["limited"]["grown_mib"] < 10, grown
    assert grown["lifted"]["cause"] is None and grown["lifted"]["grown_mib"] > 60, grown


# -- the class, graded through the CLI ---------------------------------------------------------------
TOP = COURSE.max_points()


def a_class(folder: Path, big: bool) -> Path:
    """A correct submission, a notebook just at the limit (every module, graded in full: the control), and with
    ``big`` a 200 MB notebook with the same code cells, which would be graded in full too if it were read."""
    folder.mkdir()
    (folder / "alice").mkdir()
    for module in MODULES:
        (folder / "alice" / f"{module}.py").write_text(solution(module), encoding="utf-8")
    padded_notebook(folder / "under.ipynb", hand_in_sizes.MAX_NOTEBOOK)
    if big:
        padded_notebook(folder / "big.ipynb", 200 * hand_in_sizes.MB)
    return folder


def autograde_command(subs: Path, out: Path, prelude: str = "") -> list[str]:
    """``grade autograde SUBS --out OUT --jobs 1`` in a fresh interpreter, which runs ``prelude`` first."""
    return [sys.executable, "-c", prelude + "from autograder.cli import command_line\ncommand_line()",
            "autograde", str(subs), "--out", str(out), "--jobs", "1"]


def graded(subs: Path, out: Path, tmp: Path):
    """``grade autograde SUBS`` measured (bench/measure.py: ``peak_mib`` is the largest single process's peak,
    ``sum_pss_mib`` the largest sampled sum over the process tree), and what it printed."""
    from bench.measure import measure  # noqa: PLC0415 - the repository's own measuring tool

    tmp.mkdir()
    log = out.with_suffix(".log")
    command = autograde_command(subs, out)
    # a cache folder of its own: each run computes the reference's answers alike (a warm one takes ~50 MiB less)
    env = {**os.environ, "TMPDIR": str(tmp), "GRADE_CACHE_DIR": str(tmp / "cache")}
    got = measure(command, cwd=ROOT, env=env, log=log, sample_every=0.1, timeout=900)
    return got, log.read_text(errors="replace")


def problems_of(out: Path, name: str) -> list[dict]:
    return json.loads((out / name / "results.json").read_text())["extra_data"]["problems"]


def score_of(out: Path, name: str) -> float:
    return json.loads((out / name / "results.json").read_text())["score"]


def test_a_200_mb_notebook_is_one_named_problem_and_the_class_is_graded_in_bounded_memory(tmp_path):
    without, said_without = graded(a_class(tmp_path / "without", big=False), tmp_path / "out-without", tmp_path / "t1")
    try:
        with_big, said = graded(a_class(tmp_path / "with", big=True), tmp_path / "out-with", tmp_path / "t2")
    finally:
        (tmp_path / "with" / "big.ipynb").unlink(missing_ok=True)  # pytest keeps the last runs' folders
    out = tmp_path / "out-with"
    assert (without.returncode, with_big.returncode) == (0, 0), said_without[-3000:] + said[-3000:]

    assert score_of(out, "alice") == TOP and score_of(out, "under") == TOP  # the control: read, graded in full
    assert problems_of(out, "alice") == problems_of(out, "under") == []
    assert problems_of(out, "big") == [{
        "kind": "not_graded", "cause": "notebook_too_large",
        "message": "big.ipynb is 200 MB; notebooks over 10 MB are not graded: clear its outputs (in Jupyter: "
                   "Edit > Clear Outputs of All Cells), save it and hand it in again"}]
    assert score_of(out, "big") == 0
    saved = json.loads((out / "summary.json").read_text())
    assert [(e["submission"], [(r["category"], r["why"]) for r in e["reasons"]]) for e in saved["needs_person"]] == \
        [("big", [("not_graded", "notebook over 10 MB")])]
    lines = said.rstrip("\n").splitlines()
    assert lines[-2:] == [f"needs a person: 1 (see {out / 'summary.html'})", "  big: not graded (notebook over 10 MB)"]
    assert any(line.startswith("big: 0/81  (big.ipynb is 200 MB; notebooks over 10 MB") for line in lines)
    assert "- **big**: notebook over 10 MB" in (out / "summary.md").read_text()
    assert "notebook over 10 MB" in (out / "summary.html").read_text()

    # The memory: reading the 200 MB notebook alone would take 200 MB more in the grading process (parsing it,
    # three times that, and 5.3 GB for one padded with empty lists); refused by its size, it takes nothing. Between
    # two runs of one class the largest process differs by up to ~60 MiB, the sampled sum by more.
    assert with_big.peak_mib - without.peak_mib < 100, (with_big, without)
    assert with_big.sum_pss_mib - without.sum_pss_mib < 200, (with_big, without)
    assert with_big.peak_mib < 1200, with_big
    print(f"\nlargest process: {without.peak_mib:.0f} MiB without the 200 MB notebook, {with_big.peak_mib:.0f} MiB "
          f"with it; process tree (PSS, sampled): {without.sum_pss_mib:.0f} and {with_big.sum_pss_mib:.0f} MiB")


#: run before grade autograde: staging one submission (``kitbug``) fails as a bug of the kit's would
KIT_BUG = """
import autograder.intake.stage as stage
real = stage.copy_modules
def copy_modules(root, dest, *args, **kwargs):
    if dest.name == "kitbug":
        raise KeyError("a bug of the kit's own")
    return real(root, dest, *args, **kwargs)
stage.copy_modules = copy_modules
"""


def test_a_failure_of_the_kits_own_while_staging_one_is_named_logged_and_the_class_is_graded(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("alice", "kitbug"):
        (subs / name).mkdir()
        for module in MODULES:
            (subs / name / f"{module}.py").write_text(solution(module), encoding="utf-8")
    out = tmp_path / "out"
    # a fresh interpreter, which runs KIT_BUG first; unmeasured: no memory is read here (graded() samples it)
    got = subprocess.run(autograde_command(subs, out, KIT_BUG), cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=900)
    said = got.stdout
    assert got.returncode == 3, said[-3000:]  # as for any failure of the grader's own
    assert score_of(out, "alice") == TOP and problems_of(out, "alice") == []
    assert [(p["kind"], p["cause"]) for p in problems_of(out, "kitbug")] == [("not_graded", "staging_error")]
    assert "KeyError" not in (out / "kitbug" / "results.json").read_text()  # the student reads a fixed sentence
    log = (out / "grader_errors.log").read_text()
    assert log.startswith("=== kitbug ===\nwhile staging ") and "KeyError: \"a bug of the kit's own\"" in log
    saved = json.loads((out / "summary.json").read_text())
    assert [(e["submission"], [r["category"] for r in e["reasons"]]) for e in saved["needs_person"]] == \
        [("kitbug", ["not_graded", "grader_error"])]
    assert "the grader itself failed while grading 1 submission(s) (kitbug)" in said
