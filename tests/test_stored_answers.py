"""The reference answers a run keeps for the next (grading/suites/stored_answers.py): read back as they were
computed, never for another grader or machine, never from a file someone else could have written."""
from __future__ import annotations

import os
import shutil

import pytest
import torch

from autograder.grading.suites.session import Grader

from .conftest import ROOT

pytestmark = pytest.mark.unit


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """A cache folder of this test's own: nothing kept yet."""
    monkeypatch.setenv("GRADE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GRADE_REFERENCE_CACHE", raising=False)
    return tmp_path / "cache" / "reference-answers"


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


def test_nothing_is_kept_when_switched_off(kept, monkeypatch):
    monkeypatch.setenv("GRADE_REFERENCE_CACHE", "0")
    counted = Counted(monkeypatch)
    _warm()
    _warm()
    assert counted.times == 2 and not kept.exists()


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


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_a_file_others_could_write_is_not_read(kept, monkeypatch):
    counted = Counted(monkeypatch)
    _warm()
    (path,) = kept.iterdir()
    path.chmod(0o666)
    _warm()
    assert counted.times == 2, "a file anyone could have written was unpickled"
    assert path.stat().st_mode & 0o777 == 0o600  # replaced by the answers computed again
    kept.chmod(0o777)
    _warm()
    assert counted.times == 3, "a file in a folder anyone could write was unpickled"


def test_a_cut_short_file_is_computed_again_and_replaced(kept, monkeypatch):
    counted = Counted(monkeypatch)
    _warm()
    (path,) = kept.iterdir()
    path.write_bytes(path.read_bytes()[:1000])
    _warm()
    assert counted.times == 2
    _warm()
    assert counted.times == 2, "the replaced file was not read"


def test_a_folder_that_cannot_be_written_keeps_nothing_and_grades(kept, monkeypatch, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("GRADE_CACHE_DIR", str(blocked))
    counted = Counted(monkeypatch)
    assert _warm().cache
    assert counted.times == 1


def test_two_computations_give_the_same_answers(kept, monkeypatch):
    """What a file keeps must be what computing again would give: the suites draw only from seeds. A suite that drew
    unseeded (fresh inputs each batch) would have them frozen by the file instead; this says so first."""
    monkeypatch.setenv("GRADE_REFERENCE_CACHE", "0")
    first, second = _warm(), _warm()
    assert list(first.cache) == list(second.cache)
    assert _same(list(first.cache.values()), list(second.cache.values()))
    assert _plans(first) == _plans(second)
    # the control: an unseeded draw in a case is seen
    case, _ = next(iter(second.cache.values()))
    case["request"]["unseeded"] = torch.rand(3)
    assert not _same(list(first.cache.values()), list(second.cache.values()))
