"""The reference answers a run keeps for the next (grading/suites/stored_answers.py): read back as they were
computed, never for another grader or machine, never from a file someone else could have written."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from autograder.grading.suites import stored_answers
from autograder.grading.suites.session import Grader
from autograder.sandbox.reference_server import refused
from autograder.sandbox.standin_answers import StandinAnswers
from autograder.worker import wire

from .conftest import ROOT, run_grade

SAMPLES = ROOT / "samples" / "submissions"


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """A cache folder of this test's own: nothing kept yet."""
    monkeypatch.setenv("GRADE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GRADE_REFERENCE_CACHE", raising=False)
    return stored_answers.folder()


class Counted:
    """How many times graders computed the reference answers (rather than reading them)."""

    def __init__(self, monkeypatch):
        self.times = 0
        compute = Grader._answer_every_case

        def counted(grader):
            self.times += 1
            return compute(grader)
        monkeypatch.setattr(Grader, "_answer_every_case", counted)


def _warm(course=ROOT / "course.yml") -> Grader:
    grader = Grader(course)
    grader.warm_cache()
    return grader


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
                and a.requires_grad == b.requires_grad and torch.equal(a.nan_to_num(), b.nan_to_num())
                and torch.equal(a.isnan(), b.isnan()))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


def _plans(grader: Grader) -> list:
    """Each request's batch, as positions in the cache's order (ids differ between processes, not the plan)."""
    order = {id(case["request"]): i for i, (case, _) in enumerate(grader.cache.values())}
    return sorted((order.get(rid), [order.get(id(r)) for r in run], at) for rid, (run, at) in grader.batches.items())


@pytest.mark.unit
def test_a_second_grader_reads_what_the_first_computed(kept, monkeypatch):
    counted = Counted(monkeypatch)
    first = _warm()
    assert counted.times == 1
    files = list(kept.iterdir())
    assert len(files) == 1 and files[0].suffix == ".pt"
    if os.name == "posix":  # another uid may not read it (a worker without namespaces runs as one)
        assert files[0].stat().st_mode & 0o777 == 0o600 and kept.stat().st_mode & 0o777 == 0o700
    second = _warm()
    assert counted.times == 1, "the second grader computed the answers again instead of reading them"
    assert list(first.cache) == list(second.cache)
    assert _same(list(first.cache.values()), list(second.cache.values()))
    assert _plans(first) == _plans(second) and len(second.batches) > 100  # a count's cases still go as one batch
    assert first.asked == second.asked and first.late_steps == second.late_steps
    assert first.policy.held_back == second.policy.held_back


@pytest.mark.unit
def test_nothing_is_kept_when_switched_off(kept, monkeypatch):
    monkeypatch.setenv("GRADE_REFERENCE_CACHE", "0")
    counted = Counted(monkeypatch)
    _warm()
    _warm()
    assert counted.times == 2 and not kept.exists()


@pytest.mark.unit
def test_another_reference_is_computed_afresh(kept, monkeypatch, tmp_path):
    """A changed solution (or suite, course.yml, kit, torch, CPU) is another grader: its answers are its own."""
    counted = Counted(monkeypatch)
    course = tmp_path / "course"
    shutil.copytree(ROOT / "solutions", course / "solutions")
    (course / "course.yml").write_text((ROOT / "course.yml").read_text().replace(
        "suites: autograder/unit/suites", f"suites: {ROOT / 'autograder/unit/suites'}"))
    _warm(course / "course.yml")
    solution = next(p for p in sorted((course / "solutions").glob("*.py")) if p.name != "__init__.py")
    solution.write_text(solution.read_text() + "\n# edited\n")
    _warm(course / "course.yml")
    assert counted.times == 2 and len(list(kept.iterdir())) == 2
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "ANOTHER")
    _warm(course / "course.yml")
    assert counted.times == 3


@pytest.mark.unit
@pytest.mark.skipif(os.name != "posix", reason="file modes")
@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_a_file_others_could_write_is_not_read(kept, monkeypatch, mode):
    counted = Counted(monkeypatch)
    _warm()
    (path,) = kept.iterdir()
    path.chmod(mode)
    _warm()
    assert counted.times == 2, "a file others could have written was unpickled"
    assert path.stat().st_mode & 0o777 == 0o600  # replaced by the answers computed again


@pytest.mark.unit
@pytest.mark.skipif(os.name != "posix", reason="file modes, links, FIFOs")
@pytest.mark.parametrize("change", ["folder others may enter", "folder is a link", "file has a second link",
                                    "file is a FIFO"])
def test_nothing_but_this_users_own_file_in_its_own_folder_is_read(kept, monkeypatch, tmp_path, change):
    """The folder is checked as it is opened, and each step goes through it; a FIFO does not hang the run."""
    counted = Counted(monkeypatch)
    _warm()
    (path,) = kept.iterdir()
    if change == "folder others may enter":
        kept.chmod(0o755)
    elif change == "folder is a link":
        kept.rename(tmp_path / "real")
        kept.symlink_to(tmp_path / "real")
    elif change == "file has a second link":
        os.link(path, tmp_path / "second")
    else:
        path.unlink()
        os.mkfifo(path, 0o600)
    _warm()
    assert counted.times == 2, f"read although the {change}"


@pytest.mark.unit
def test_a_cache_folder_that_cannot_be_named_keeps_nothing_and_grades(monkeypatch):
    monkeypatch.setenv("GRADE_CACHE_DIR", "~no-such-user-here/cache")
    monkeypatch.delenv("GRADE_REFERENCE_CACHE", raising=False)
    assert stored_answers.folder() is None
    assert _warm().cache


@pytest.mark.unit
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="sudo: root with a user's HOME")
def test_under_sudo_root_keeps_its_own_not_in_the_users_home(monkeypatch, tmp_path):
    import pwd  # noqa: PLC0415 - POSIX only

    home = tmp_path / "someone"
    home.mkdir()
    os.chown(home, 65534, 65534)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GRADE_CACHE_DIR", raising=False)
    monkeypatch.delenv("GRADE_REFERENCE_CACHE", raising=False)
    where = stored_answers.folder()
    assert where is not None and where.is_relative_to(pwd.getpwuid(0).pw_dir) and not where.is_relative_to(home)


@pytest.mark.unit
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_a_file_another_user_owns_is_not_read(kept, monkeypatch):
    """As a worker's uid would own a file it planted: refused, however it is named."""
    counted = Counted(monkeypatch)
    _warm()
    (path,) = kept.iterdir()
    os.chown(path, 65534, 65534)
    _warm()
    assert counted.times == 2, "a file another user owns was unpickled"


@pytest.mark.unit
@pytest.mark.skipif(os.name != "posix", reason="O_NOFOLLOW")
def test_a_link_in_the_files_place_is_not_followed(kept, monkeypatch, tmp_path):
    """Even to a file of this user's: the path is not what was checked."""
    counted = Counted(monkeypatch)
    _warm()
    (path,) = kept.iterdir()
    elsewhere = tmp_path / "elsewhere.pt"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    _warm()
    assert counted.times == 2, "a link was followed"


@pytest.mark.unit
def test_a_file_is_read_only_under_its_own_name(kept):
    """The key is inside the file too: one renamed (another course's, another CPU's) is not this one's."""
    cache, asked = {("step", "count", 0, "case"): ({"request": {}}, {"ok": True})}, []
    made = stored_answers.save("one grader", cache, asked)
    assert made is not None and stored_answers.load("one grader") is not None
    made.rename(stored_answers.file_for("another grader"))
    assert stored_answers.load("another grader") is None


@pytest.mark.unit
def test_what_does_not_pickle_keeps_nothing_and_leaves_nothing(kept):
    assert stored_answers.save("a grader", {("s", "c", 0, "case"): ({"mistakes": {"x": lambda: 0}}, {})}, []) is None
    assert not kept.exists() or not any(kept.iterdir())


@pytest.mark.unit
def test_a_folder_keeps_the_newest_files_only(kept):
    for n in range(stored_answers.KEEP + 2):
        assert stored_answers.save(f"grader {n}", {}, []) is not None
        os.utime(stored_answers.file_for(f"grader {n}"), (n, n))  # each one older than the next
    assert len(list(kept.glob("*.pt"))) == stored_answers.KEEP
    assert (stored_answers.load("grader 0") is None
            and stored_answers.load(f"grader {stored_answers.KEEP + 1}") is not None)


@pytest.mark.unit
def test_a_cut_short_file_is_computed_again_and_replaced(kept, monkeypatch):
    counted = Counted(monkeypatch)
    _warm()
    (path,) = kept.iterdir()
    path.write_bytes(path.read_bytes()[:1000])
    _warm()
    assert counted.times == 2
    _warm()
    assert counted.times == 2, "the replaced file was not read"


@pytest.mark.unit
def test_a_folder_that_cannot_be_written_keeps_nothing_and_grades(kept, monkeypatch, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("GRADE_CACHE_DIR", str(blocked))
    counted = Counted(monkeypatch)
    assert _warm().cache
    assert counted.times == 1


@pytest.mark.unit
def test_two_computations_give_the_same_answers(kept, monkeypatch):
    """What a file keeps must be what computing again would give: the suites draw only from seeds. A suite that drew
    unseeded (fresh inputs each batch) would have them frozen by the file instead; this says so first."""
    monkeypatch.setenv("GRADE_REFERENCE_CACHE", "0")
    first, second = _warm(), _warm()
    assert list(first.cache) == list(second.cache)
    assert _same(list(first.cache.values()), list(second.cache.values()))
    assert _plans(first) == _plans(second)
    # the control: one value drawn otherwise, in one answer, is seen
    _, expected = next(v for v in second.cache.values() if isinstance(v[1].get("output"), torch.Tensor))
    expected["output"].view(-1)[0] += 1e-6
    assert not _same(list(first.cache.values()), list(second.cache.values()))


def test_grade_nbgrader_keeps_them_and_grade_autograde_reads_them(tmp_path):
    """An instructor's path: `grade nbgrader` builds the course and keeps the answers; `grade autograde` reads that
    file (a run that computes replaces it: a new inode) and grades as a run with nothing kept does."""
    env = {"GRADE_CACHE_DIR": str(tmp_path / "cache")}
    built = run_grade("nbgrader", "--course-dir", str(tmp_path / "course"), env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "cases: kept in " in built.stdout, built.stdout
    (made,) = (tmp_path / "cache").glob("reference-answers*/*.pt")
    inode = made.stat().st_ino
    graded = {}
    for name, extra in (("kept", {}), ("none kept", {"GRADE_REFERENCE_CACHE": "0"})):
        done = run_grade("autograde", str(SAMPLES / "bob"), "--out", str(tmp_path / name), env={**env, **extra})
        assert done.returncode == 0, done.stdout + done.stderr
        graded[name] = [(t["name"], t["score"], t["status"], t.get("output"))
                        for t in json.loads((tmp_path / name / "bob" / "results.json").read_text())["tests"]]
    assert made.stat().st_ino == inode, "grade autograde computed the answers grade nbgrader kept"
    assert list((tmp_path / "cache").glob("reference-answers*/*.pt")) == [made], "a run kept its own under another name"
    assert graded["kept"] == graded["none kept"] and any(score == 0 for _, score, _, _ in graded["kept"])


# -- the stand-ins' answers a batch keeps for the next ---------------------------------------------------------------
def _frames(n: int, size: int = 10, first: int = 0) -> list[tuple[bytes, bytes]]:
    """(a call's key, an ok answer's frame), as a batch's reference worker gives them."""
    return [(bytes([i]) * 32, wire.frame(b'{"ok": true, "n": %d}' % i, bytes(size))) for i in range(first, first + n)]


@pytest.mark.unit
def test_the_standins_answers_a_batch_kept_are_read_back_in_order_and_only_under_their_name(kept):
    answers = _frames(5)
    path = stored_answers.save_standins("a grader", answers)
    assert path is not None and path.suffix == ".standins" and path.parent == kept
    if os.name == "posix":
        assert path.stat().st_mode & 0o777 == 0o600 and kept.stat().st_mode & 0o777 == 0o700
    assert stored_answers.load_standins("a grader") == answers
    assert stored_answers.load_standins("another grader") == []
    path.rename(stored_answers.standins_file_for("another grader"))  # the key is inside the file too
    assert stored_answers.load_standins("another grader") == []


@pytest.mark.unit
@pytest.mark.parametrize("size", [0, 10, 300])
def test_the_newest_standins_answers_are_kept_within_the_bound_and_read_back(kept, monkeypatch, size):
    """Many small answers as well as a few large ones: what is written within the bound is read back, whole."""
    answers = _frames(200, size=size)
    monkeypatch.setattr(stored_answers, "MAX_STANDIN_BYTES", 2000)
    path = stored_answers.save_standins("a grader", answers)
    assert path.stat().st_size <= 2000
    back = stored_answers.load_standins("a grader")
    assert back and back == answers[-len(back):] and len(back) < len(answers)


@pytest.mark.unit
def test_a_kept_answer_that_is_not_an_ok_answer_is_left_out():
    """A refusal (or a ``$stale``) says something of one reference worker at one moment: never kept, nor taken from a
    file."""
    answers = StandinAnswers()
    refusal = refused("planted")
    answers.preload([*_frames(2), (bytes([9]) * 32, refusal), (bytes([8]) * 32, b"\x00\x00")])
    assert [key for key, _ in answers.items()] == [bytes([0]) * 32, bytes([1]) * 32]
    answers.put(bytes([9]) * 32, refusal[4:4 + int.from_bytes(refusal[:4], "big")], refusal)
    assert len(answers.items()) == 2 and answers.added == 0


@pytest.mark.unit
def test_a_standins_file_cut_short_or_that_others_could_write_is_not_read(kept):
    answers = _frames(4, size=100)
    path = stored_answers.save_standins("a grader", answers)
    whole = path.read_bytes()
    path.write_bytes(whole[:-1])
    assert stored_answers.load_standins("a grader") == []
    path.write_bytes(whole)  # the control: whole again, read again
    assert stored_answers.load_standins("a grader") == answers
    if os.name == "posix":
        path.chmod(0o620)
        assert stored_answers.load_standins("a grader") == []


@pytest.mark.unit
def test_switched_off_no_standins_answers_are_kept(kept, monkeypatch):
    monkeypatch.setenv("GRADE_REFERENCE_CACHE", "0")
    assert stored_answers.save_standins("a grader", _frames(2)) is None
    assert stored_answers.load_standins("a grader") == [] and not kept.exists()


@pytest.mark.unit
def test_a_grader_starts_with_what_its_last_batchs_jobs_learned(kept):
    """What each job held (``standins_learned``) is merged, the last job's newest; the next grader starts with it, and
    a call asked in a batch before is answered without going to the reference worker."""
    first = _warm()
    assert first.kept_standins == []
    first.keep_standins([])  # no job learned anything: nothing is written
    assert stored_answers.load_standins(first.identity) == []
    first.keep_standins([_frames(3), _frames(3, first=2)])
    second = _warm()
    assert second.kept_standins == _frames(5)
    second.keep_standins([_frames(1, first=7)])  # what is learned is the newest; what was kept stays before it
    assert _warm().kept_standins == [*_frames(5), *_frames(1, first=7)]
    answers = StandinAnswers()
    answers.preload(second.kept_standins)
    assert answers.get(bytes([4]) * 32) == _frames(1, first=4)[0][1] and answers.misses == 0


def test_a_batch_gives_its_students_the_standins_answers_the_last_batch_kept(kept, tmp_path):
    """The samples graded three times with one cache folder: the first batch keeps the stand-ins' answers it was
    given, and the second, which starts with them, gives every student the same results. The control, that the kept
    answers are what a batch gives the students' code: each call kept with another's answer, the steps that call a
    stand-in fail."""
    def graded(out: Path) -> dict:
        done = run_grade("autograde", *(str(p) for p in sorted(SAMPLES.iterdir())), "--out", str(out), "--force")
        assert done.returncode == 0, done.stderr
        return {p.parent.name: json.loads(p.read_text())["score"] for p in sorted(out.glob("*/results.json"))}

    first = graded(tmp_path / "first")
    (path,) = kept.glob("*.standins")
    key = path.stem
    answers = stored_answers._answers(path.read_bytes(), key)
    assert len(answers) > 10
    assert graded(tmp_path / "second") == first
    frames = [frame for _, frame in answers]  # each call kept with another call's answer: ok answers, all wrong
    path.write_bytes(stored_answers._STANDINS + key.encode() + b"\n" + b"".join(
        call + len(frame).to_bytes(4, "big") + frame for (call, _), frame in zip(answers, frames[1:] + frames[:1])))
    planted = graded(tmp_path / "third")
    assert sum(planted.values()) < sum(first.values()), "the kept answers were not what the students' code was given"
