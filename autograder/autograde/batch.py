"""Grade a batch: stage every submission, skip those already graded, grade the rest in parallel.

Each job (``--jobs``) is a forked grading process with its own zygote (a clone of the batch's, forked
warm) and its own range of worker uids; it writes each submission's results.json atomically itself, so a batch killed
half-way (even with ``kill -9``) keeps everything finished, and a re-run skips every submission whose results carry the
same submission and grader hashes. A job gets its next submission only once it is free, so Ctrl-C stops the batch at
once: every job, its zygote clone and sandboxes are ended (``halt``), none waits for the submissions not yet started.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import select
import shutil
import signal
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.suites import submission_page
from autograder.grading.suites.graded import GradedSubmission, grade_submission
from autograder.intake.discover import Source
from autograder.intake.stage import Staged, stage
from autograder.outputs import results as results_model
from autograder.sandbox.zygote import ClonesForForks
from autograder.worker import protocol, tempdirs
from autograder.worker.syscalls import die_with_parent

from . import content_hashes


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
        staged = stage(source.path, source.name, staging, modules, steps, source.others, source.beside)
        digest = content_hashes.submission(staged.folder, {"errors": staged.module_errors, "problem": staged.problem,
                                                           **({"beside": staged.beside} if staged.beside else {})})
        job = Job(source, staged, digest,
                  {"submission": source.name, "submitted_at": (times or {}).get(source.name, (times or {}).get("*")),
                                           "submission_hash": digest, "grader_hash": grader_hash})
        before = _previous(out / source.name / "results.json")
        same = (before.get("submission_hash") == digest and before.get("grader_hash") == grader_hash
                and before.get("submitted_at") == job.extra["submitted_at"])
        (done if same and not force else todo).append(job)
    return todo, done


# -- the grading processes ----------------------------------------------------------------------
def _serve(slot: int, channel, grader, jobs: list, out: Path, clones: ClonesForForks, parent: int) -> None:
    """A batch job: grade each job (an index into ``jobs``) sent on ``channel`` until told to stop.

    Forked from the batch, it inherits its arguments as they are (nothing is pickled): ``grader``, the batch's
    Grader (course and reference loaded, no zygote), which takes clone number ``slot`` as its zygote.

    Answers ("done", its GradedSubmission) or ("failed", (exception, traceback text)) per job. It ignores SIGINT:
    Ctrl-C on a terminal reaches the whole foreground process group, and the batch (the parent) alone decides what
    stops.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)  # a job never outlives the batch (kill -9 included)
    grader.adopt(clones.take(slot))
    try:
        while True:
            try:
                index = channel.recv()
            except EOFError:
                break
            if index is None:  # done: what its stand-ins were answered, for the next batch
                with contextlib.suppress(OSError):  # a batch that stopped waiting keeps nothing
                    _say(channel, ("learned", grader.standins_learned()))
                break
            try:
                answer = ("done", grade_job(jobs[index], out, grader))
            except Exception as exc:  # noqa: BLE001 - raised again in the batch, which stops
                answer = ("failed", (exc, traceback.format_exc()))
            try:
                _say(channel, answer)
            except (TypeError, AttributeError, pickle.PicklingError):  # an exception that does not pickle
                _say(channel, ("failed", (RuntimeError(answer[1][1]), answer[1][1])))
    finally:
        grader.close()


def _say(channel, answer) -> None:
    """A job's answer, by value: plain pickle, not the channel's own pickler. Through that one, torch sends a
    tensor's memory as a file descriptor, from a thread that listens on a socket in a ``pymp-*`` folder of the
    temporary folder; a job that is killed (Ctrl-C, ``halt``) cannot remove it (tests/integration/test_interrupt.py)."""
    channel.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


def _heard(channel):
    """What a job said with ``_say``."""
    return pickle.loads(channel.recv_bytes())  # a grading job forked from this process, on the trusted side


class _RemoteTraceback(Exception):
    def __str__(self) -> str:
        return "\n" + self.args[0]


class JobDied(RuntimeError):
    """A batch job ended without answering (killed from outside, or a bug of the grader's)."""


def write(out: Path, graded: GradedSubmission) -> None:
    """A graded submission's feedback.html, then its results.json (atomically)."""
    # the page first: a results.json is what says a submission is done (resume)
    page = graded.page
    submission_page.write_page(out / graded.name / "feedback.html", graded.name, page.cards, page.pictures, page.lines)
    results_model.write_atomic(out / graded.name / "results.json", graded.results)


def grade_job(job: Job, out: Path, grader) -> GradedSubmission:
    """Grade one staged submission and write its feedback page and results.json."""
    graded = grade_submission(grader, job.staged, job.extra)
    write(out, graded)
    return graded


def run(grader, jobs: list[Job], out: Path, zygote, n_jobs: int, on_done, forked=None) -> None:
    """Grade ``jobs`` in ``n_jobs`` processes, each with a clone of ``zygote``; call ``on_done`` with each
    ``GradedSubmission``, and ``forked`` (if given) once every job is started: this process forks nothing after.
    Once all are graded, the stand-ins' answers the jobs were given are kept for the next batch (``keep_standins``).

    A job is handed to a process only when that process is free, so nothing is queued that an interrupt
    would have to wait for: on ``KeyboardInterrupt`` (Ctrl-C) every job process is killed at once (their
    zygote clones, hosts and sandboxes go with them, ``halt``), and the interrupt goes on up; every
    submission finished so far keeps its results.json. With one job too, the grading runs in a process of
    its own: this one only waits, so an interrupt never lands in the middle of a talk with a sandbox.
    """
    if not jobs:
        return
    n_jobs = max(1, min(n_jobs, len(jobs)))
    warm_pictures()
    grader.warm_cache()  # reference answers, computed once here and shared by every job through fork
    clones: ClonesForForks | None = None
    processes: list = []
    context = multiprocessing.get_context("fork")
    try:
        clones = ClonesForForks(zygote, n_jobs)  # forked warm, each with its own uid block
        channels = {}
        for slot in range(n_jobs):
            ours, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(slot, theirs, grader, list(jobs), out, clones, os.getpid()),
                                      name=f"grade-job-{slot}", daemon=True)
            process.start()
            theirs.close()
            processes.append(process)
            channels[ours] = process
        if forked is not None:
            forked()
        pending = iter(range(len(jobs)))
        busy: dict = {}  # channel -> the index of the job it grades

        def hand_out(channel) -> None:
            index = next(pending, None)
            if index is not None:
                channel.send(index)
                busy[channel] = index

        for channel in channels:
            hand_out(channel)
        while busy:
            sentinels = {channels[c].sentinel: c for c in busy}
            for ready in multiprocessing.connection.wait([*busy, *sentinels]):
                channel = sentinels.get(ready, ready)
                if channel not in busy:
                    continue
                try:
                    kind, answer = _heard(channel)
                except (EOFError, OSError):
                    raise JobDied(f"a grading job died while grading {jobs[busy[channel]].source.name} "
                                  f"(exit status {channels[channel].exitcode})") from None
                index = busy.pop(channel)
                if kind == "failed":  # as concurrent.futures does: the job's exception, its traceback as the cause
                    exc, text = answer
                    raise exc from _RemoteTraceback(f"grading {jobs[index].source.name}:\n{text}")
                hand_out(channel)
                on_done(answer)
        for channel in channels:
            channel.send(None)  # done: each job says what its stand-ins were answered, closes its grader and exits
        grader.keep_standins([answers for channel in channels for answers in [_learned(channel)] if answers])
        for process in processes:
            process.join(timeout=30)
    except BaseException:  # Ctrl-C (KeyboardInterrupt), or a job that failed: nothing goes on grading
        halt(processes, clones.clones if clones else [], zygote)
        raise
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
            process.join(timeout=5)
        if clones is not None:
            clones.close()


def _learned(channel) -> list | None:
    """A job's last word (``Grader.standins_learned``), or None if it says nothing else within 30 s."""
    try:
        if channel.poll(30):
            kind, answers = _heard(channel)
            return answers if kind == "learned" else None
    except (EOFError, OSError, ValueError, TypeError):
        pass
    return None


def warm_pictures() -> None:
    """Load the pictures' drawing code (Pillow) and colour tables once, here, before any job is forked.

    Every job inherits them, so the feedback pages' heatmaps, and the class summary's histogram drawn here when
    the batch ends (or at once when it is interrupted: Ctrl-C), pay no import then. About 0.01 s (matplotlib,
    which drew them before, took 0.27 s here, on one core while the other waited).
    """
    from autograder.pages import colormaps, drawing  # noqa: PLC0415 - warmed here, before the jobs fork, and only then

    for name in ("viridis", "RdBu_r", "PuOr"):
        colormaps.Colormap(name)
    drawing.font(8)


def halt(processes, clones, zygote) -> None:
    """Stop a batch at once: freeze every job (it writes nothing more), kill their zygote clones (each clone's
    hosts and sandboxes die with it), then kill the jobs.

    In that order so that no job sees its sandbox die and writes a result about it, and no host is left
    answering a job that is gone. The clones are the children of ``zygote``, which grades nothing itself
    here; where they cannot be found, each is asked to quit and given a second.
    """
    for process in processes:
        if process.is_alive():
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGSTOP)
    found = children(zygote.process.pid) if clones and getattr(zygote, "process", None) is not None else []
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if clones and not found:
        _quit(clones, seconds=1.0)
    for process in processes:
        if process.is_alive():
            process.kill()


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` now (Linux's /proc; none found elsewhere)."""
    found = []
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                if int(stat.read().rsplit(b")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _quit(clones, seconds: float) -> None:
    """Ask each clone to quit; wait up to ``seconds`` for them to exit (a clone's channel then reads empty)."""
    ending = []
    for clone in clones:
        with contextlib.suppress(OSError):
            protocol.request(clone.control, {"op": "quit"})
            ending.append(clone.control)
    deadline = time.monotonic() + seconds
    while ending and time.monotonic() < deadline:
        for sock in select.select(ending, [], [], max(0.0, deadline - time.monotonic()))[0]:
            try:
                if not sock.recv(65536):
                    ending.remove(sock)
            except OSError:
                ending.remove(sock)


def staging_dir(out: Path) -> Path:
    """A staging folder in the system's temporary folder; those of batches that were killed are removed.

    Mode 0700: no worker's uid enters it. A worker reaches its own submission only: bind-mounted (namespaces), through
    its host's descriptor (``uid+landlock``, ``uid+rlimits``: ``worker/confine.enter``), or, keeping the user's uid
    (``userns``, ``landlock``), as the one folder beside the allow-list that its sandbox lets it read.
    """
    out.mkdir(parents=True, exist_ok=True)
    return tempdirs.make("grade-staging-", mode=0o700)


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
