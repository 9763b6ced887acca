"""Grade a batch: stage every submission, skip those already graded, grade the rest in parallel.

Each job (``--jobs``) is a forked grading process with its own zygote (a clone of the batch's, forked
warm) and its own range of worker uids; it writes each submission's results.json atomically itself, so a batch killed half-way (even
with ``kill -9``) keeps everything finished, and a re-run skips every submission whose results carry
the same submission and grader hashes.
"""
from __future__ import annotations

import multiprocessing
import os
import shutil
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from autograder.intake.discover import Source
from autograder.intake.stage import Staged, stage

from autograder.outputs import results as results_model

from . import feedback, fingerprint, results


@dataclass
class Job:
    source: Source
    staged: Staged
    digest: str
    extra: dict = field(default_factory=dict)


def _previous(path: Path) -> dict:
    try:
        return results_model.read(path).extra_data.model_dump()
    except results_model.ResultsError:
        return {}


def prepare(sources: list[Source], staging: Path, modules: list[str], out: Path, grader_hash: str,
            force: bool, times: dict[str, str] | None = None,
            steps: dict[str, list[str]] | None = None) -> tuple[list[Job], list[Job]]:
    """Stage each source; return (to grade, already graded with the same inputs).

    ``times``: when each was handed in, as the platform recorded it (intake/times.py); else unknown.
    """
    todo, done = [], []
    for source in sources:
        staged = stage(source.path, source.name, staging, modules, steps)
        digest = fingerprint.submission(staged.folder, {"errors": staged.module_errors, "problem": staged.problem})
        job = Job(source, staged, digest, {"submission": source.name, "submitted_at": (times or {}).get(source.name, (times or {}).get("*")),
                                           "submission_hash": digest, "grader_hash": grader_hash})
        before = _previous(out / source.name / "results.json")
        same = (before.get("submission_hash") == digest and before.get("grader_hash") == grader_hash
                and before.get("submitted_at") == job.extra["submitted_at"])
        (done if same and not force else todo).append(job)
    return todo, done


# -- the grading processes ----------------------------------------------------------------------
_grader = None  # the parent's Grader (course and reference loaded, no zygote), inherited by fork


def _start(slots, zygotes, parent: int) -> None:
    from multiprocessing.util import Finalize  # noqa: PLC0415

    from autograder.worker.syscalls import die_with_parent  # noqa: PLC0415

    die_with_parent(parent)  # a job never outlives the batch (kill -9 included)

    with slots.get_lock():
        slot = slots.value
        slots.value += 1
    for i, zygote in enumerate(zygotes):
        if i != slot:
            zygote.forget()
    _grader.adopt(zygotes[slot])
    Finalize(_grader, _grader.close, exitpriority=10)


def grade_staged(staged: Staged, extra: dict, grader) -> tuple[dict, dict, tuple]:
    """Grade one staged submission: (its results.json, what the progress bar shows, its feedback page's
    cards, pictures and lines). Writes nothing: ``write`` does.

    Shared by the local jobs and the Dask workers (``autograder/cluster/``), so both grade alike.
    """
    if staged.problem:
        result = results.rejected(grader.course, staged.problem, staged.notes, staged.cause)
        (cards, pictures), lines = feedback.cards_and_pictures(result), result["output"].splitlines()
        result = feedback.embed(result, cards, pictures)
    else:
        result = grader.grade(staged.folder, notes=staged.notes, module_errors=staged.module_errors)
        cards, pictures, lines = grader.last_cards, grader.last_pictures, grader.last_lines
    errors = [] if staged.problem else list(getattr(grader, "last_grader_errors", []))
    result["extra_data"] = {**extra, "isolation": grader.zygote.level, "grader_errors": len(errors),
                            "problems": (result.get("extra_data") or {}).get("problems", [])}
    item = {"name": extra["submission"], "score": result["score"], "problem": staged.problem,
            "isolation": grader.zygote.isolation, "grader_errors": errors}
    return result, item, (cards, pictures, lines)


def write(out: Path, name: str, result: dict, page: tuple) -> None:
    """A graded submission's feedback.html, then its results.json (atomically)."""
    # the page first: a results.json is what says a submission is done (resume)
    feedback.write_page(out / name / "feedback.html", name, *page)
    results.write_atomic(out / name / "results.json", result)


def grade_job(job: Job, out: Path, grader=None) -> dict:
    """Grade one staged submission and write its feedback page and results.json; return what the progress bar shows."""
    result, item, page = grade_staged(job.staged, job.extra, grader or _grader)
    write(out, job.source.name, result, page)
    return item


def run(grader, jobs: list[Job], out: Path, zygote, n_jobs: int, on_done) -> None:
    """Grade ``jobs`` in ``n_jobs`` processes, each with a clone of ``zygote``; call ``on_done`` per submission."""
    global _grader
    n_jobs = max(1, min(n_jobs, len(jobs)))
    if n_jobs == 1:
        grader.adopt(zygote)
        for job in jobs:
            on_done(grade_job(job, out, grader))
        return
    grader.warm_cache()  # reference answers, computed once here and shared by every job through fork
    _grader = grader
    clones = []
    context = multiprocessing.get_context("fork")
    slots = context.Value("i", 0)
    try:
        for _ in range(n_jobs):
            clones.append(zygote.clone())  # forked warm, each with its own uid block
        with ProcessPoolExecutor(max_workers=n_jobs, mp_context=context, initializer=_start,
                                 initargs=(slots, [*clones, zygote], os.getpid())) as pool:
            futures = [pool.submit(grade_job, job, out) for job in jobs]
            for future in as_completed(futures):
                on_done(future.result())
    finally:
        for clone in clones:
            clone.close()


def staging_dir(out: Path) -> Path:
    """A staging folder in the system's temporary folder; those of batches that were killed are removed.

    Not inside ``out``: without namespaces, workers read the staged files as an unprivileged uid, which
    must be able to reach them (``out`` may sit in a private folder).
    """
    from autograder.worker import tempdirs  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    return tempdirs.make("grade-staging-", mode=0o711)  # traversable, not listable


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
