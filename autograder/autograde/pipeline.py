"""The batch pipeline of ``grade autograde``: discover, stage, hash and resume, check the isolation, grade
(``--jobs`` processes here, or Dask), show the progress, write the class summary.

Each submission's results.json is written as soon as it is graded; a re-run skips submissions already
graded with the same submission and grader (content hashes), so an interrupted batch resumes where it stopped.
``main``'s keyword defaults are the command line's; ``autograder/commands/autograde.py`` checks the options.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

from autograder import console
from autograder.usage import UsageError
from autograder.worker.isolation import Level


def main(submissions: tuple[Path, ...] = (), out: Path = Path("results"), course_file: Path = Path("course.yml"),
         n_jobs: int | None = None, force: bool = False, times_file: Path | None = None,
         nbgrader_course: Path | None = None, assignment: str | None = None,
         trust_submissions: bool = False, require: Level | str | None = None, executor: str = "local",
         scheduler: str | None = None, local_workers: int | None = None, roster_file: Path | None = None,
         scheduler_tls: dict | None = None) -> int:
    """Grade ``submissions`` (or an nbgrader course's submitted/ notebooks) into ``out``; the options are
    ``grade autograde``'s, checked (``autograder/commands/autograde.py``).

    ``executor``: ``local`` (``n_jobs`` processes here) or ``dask`` (a scheduler at ``scheduler``, or a
    LocalCluster of ``local_workers``; docs/cluster.md), ``scheduler_tls`` the certificate shown to
    ``scheduler`` (``cluster/tls.py``). ``require``: the lowest isolation level to grade at.
    ``roster_file``: the class list; the summary then names who is not on it and who handed nothing in.

    0 when every submission was graded; 3 when the grader itself failed on some (grader_errors.log); 130 when
    interrupted (Ctrl-C): what finished keeps its results and is in the class summary, a re-run grades the rest.
    """
    with interrupts() as ctrl_c:
        try:
            return _main(submissions, out, course_file, n_jobs, force, times_file, nbgrader_course, assignment,
                         trust_submissions, Level(require) if require else None, executor, scheduler, local_workers,
                         roster_file, scheduler_tls)
        except (KeyboardInterrupt, Interrupted) as exc:
            ctrl_c.pressed = True  # a second Ctrl-C from now on ends the process at once
            if not isinstance(exc, Interrupted):  # before any submission was graded
                console.note("interrupted; run the same command again to resume")
            return INTERRUPTED


def _main(submissions, out, course_file, n_jobs, force, times_file, nbgrader_course, assignment, trust_submissions,
          require, executor, scheduler, local_workers, roster_file, scheduler_tls=None) -> int:
    from autograder.assign import recorded_from
    from autograder.sandbox.zygote import Zygote
    from autograder.intake import times
    from autograder.intake.discover import nbgrader_submissions

    cluster = None if executor == "local" else {
        "scheduler": scheduler, "local_workers": None if scheduler else local_workers or os.cpu_count() or 1,
        "tls": scheduler_tls}
    roster = _roster(roster_file) if roster_file else None
    try:
        submitted = times.read(times_file) if times_file else {}
    except times.TimesError as exc:
        raise UsageError(str(exc)) from None
    found = None
    if nbgrader_course:
        sources, stamps, problems = nbgrader_submissions(nbgrader_course, assignment)
        found, submitted = (sources, problems), {**stamps, **submitted}
    # the public checks students have, recorded from other sources: refused before torch loads and the zygote starts
    recorded_from.refuse_if_stale(course_file, then="grade release (and grade gradescope) again",
                                  undone="nothing was graded")
    # it imports torch while we import ours and load the course (a LocalCluster's workers get clones of it;
    # workers on other machines start their own)
    zygote = Zygote() if cluster is None or not cluster["scheduler"] else None
    nbgrader_api: list = []  # nbgrader's API, imported while the jobs grade (``nbgrader_api.ImportedMeanwhile``)

    def import_nbgrader_api() -> None:
        from autograder.nbgrader_course.nbgrader_api import ImportedMeanwhile

        nbgrader_api.append(ImportedMeanwhile())
    notebooks = None  # an nbgrader course's feedback notebooks, built as each student is graded
    if found and found[0]:  # (on Dask too, built at the write-back: no thread imports nbgrader's API meanwhile there)
        from autograder.nbgrader_course.feedback_meanwhile import FeedbackMeanwhile

        notebooks = FeedbackMeanwhile(nbgrader_course, found[0], out)
    try:
        grader = _load(course_file)
        logged = grade(grader, tuple(submissions), out, n_jobs or os.cpu_count() or 1, force, zygote,
                       trust_submissions, submitted, found, require, cluster, roster, roster_file=roster_file,
                       forked=import_nbgrader_api if notebooks else None,
                       graded_one=notebooks.add if notebooks and cluster is None else None)
        if notebooks:
            for meanwhile in nbgrader_api:
                meanwhile.wait()
            _to_nbgrader(nbgrader_course, found[0], out, notebooks)
    finally:
        if notebooks:  # first: a Ctrl-C while the thread below is waited for leaves nothing built behind
            notebooks.close()
        for meanwhile in nbgrader_api:  # no thread left half-way through an import as the process ends
            meanwhile.wait()
        if zygote is not None:
            zygote.close()
    if logged:  # a bug of the grader's must not pass for a student's failure, nor for a clean run
        console.error(f"the grader itself failed while grading {len(logged)} submission(s) "
                      f"({', '.join(sorted(logged)[:10])}): their results tell the students so; the tracebacks are "
                      f"in {out / 'grader_errors.log'}")
        return 3
    return 0


#: the exit status of a run stopped by Ctrl-C (128 + SIGINT, as a shell reports it)
INTERRUPTED = 130


class Interrupted(Exception):
    """The batch was stopped by Ctrl-C; what finished is written, the summary too, and the user was told."""


class _CtrlC:
    """The first Ctrl-C raises KeyboardInterrupt in the main thread: the batch stops its jobs, keeps what finished,
    writes the class summary and exits 130. The second ends the process at once (130): everything the batch
    started dies with it (each process it starts dies with its parent, as after ``kill -9``)."""

    def __init__(self) -> None:
        self.pressed = False

    def __call__(self, signum, frame) -> None:
        if self.pressed:
            try:
                os.write(2, b"\ninterrupted again: stopping at once\n")
            finally:
                os._exit(INTERRUPTED)
        self.pressed = True
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupts():
    """Ctrl-C (SIGINT) handled as ``_CtrlC`` says while the block runs (in the main thread; elsewhere, as before).

    Once Ctrl-C was pressed, the handler stays: a second one while the process winds down still exits at once.
    """
    handler = _CtrlC()
    if threading.current_thread() is not threading.main_thread():
        yield handler
        return
    before = signal.signal(signal.SIGINT, handler)
    try:
        yield handler
    finally:
        if not handler.pressed:
            signal.signal(signal.SIGINT, before)


def _to_nbgrader(course_dir: Path, sources, out: Path, notebooks=None) -> None:
    """Each student's points into nbgrader's gradebook, then their feedback into autograded/ notebooks (those
    ``notebooks``, a ``FeedbackMeanwhile``, built while the class was graded, moved in; the others built now)."""
    from autograder.outputs.results import ResultsError, read

    try:
        from autograder.nbgrader_course import nbgrader_gradebook
        from autograder.nbgrader_course.nbgrader_api import import_nbgrader_api

        import_nbgrader_api()
    except ImportError:
        console.warn(f"nbgrader is not installed here: the results are in {out}/, but nbgrader's gradebook was not "
                     "updated (pip install nbgrader)")
        return
    results = {}
    for source in sources:
        try:
            results[source.name] = read(out / source.name / "results.json").as_json()
        except ResultsError:
            continue
    assignment = sources[0].path.name
    try:
        cells = nbgrader_gradebook.write(course_dir, assignment, results,
                                         submitted={source.name: source.path for source in sources})
    except nbgrader_gradebook.GradebookError as exc:
        raise UsageError(str(exc)) from None
    for source in sources:
        if source.name not in results:
            continue
        if notebooks is not None:
            notebooks.take(source.name, results[source.name])
        else:
            nbgrader_gradebook.feedback_notebooks(course_dir, assignment, source.name, source.path,
                                                  results[source.name])
    console.say(f"nbgrader: {cells} grades of {len(results)} student(s) written to the gradebook of {course_dir}; "
                f"feedback notebooks in {course_dir}/autograded/ (nbgrader generate_feedback {assignment})")


def _roster(path: Path):
    """The roster's students, read before anything is graded (a bad roster stops the run at once)."""
    from autograder.export.roster import RosterError, read_roster

    try:
        return read_roster(path)
    except RosterError as exc:
        raise UsageError(str(exc)) from None


def _load(course_file: Path):
    """The grader: torch, the course and the reference, loaded for the process's whole life (``long_lived.py``)."""
    from autograder import long_lived
    from autograder.course import CourseError

    with long_lived.loading():
        from autograder.grading.suites.session import Grader

        try:
            return Grader(course_file)
        except CourseError as exc:
            raise UsageError(str(exc)) from None


def grade(grader, submissions: tuple[Path, ...], out: Path, n_jobs: int, force: bool, zygote,
          trust_submissions: bool = False, submitted: dict[str, str] | None = None, found=None,
          require: Level | None = None, cluster: dict | None = None, roster=None, forked=None,
          graded_one=None, roster_file: Path | None = None) -> dict[str, str]:
    """Stage, skip what is graded, grade the rest; write the class summary. The submissions the grader failed on.

    ``forked``: called once the local jobs are started (``batch.run``); not on Dask. ``graded_one``: called with
    each submission's name once its results.json is written (while the others are graded)."""
    from tqdm import tqdm

    from autograder.autograde import batch, grader_log, summary
    from autograder.autograde.run_policy import RunPolicy
    from autograder.pages import changes
    from autograder.intake.discover import discover

    course = grader.course
    sources, problems = found if found is not None else discover(list(submissions), course.modules)
    for problem in problems:
        console.warn(problem, label="skipped: ")
    if not sources:
        raise UsageError("no submission to grade")
    staging = batch.staging_dir(out)
    top = course.max_points()
    start = time.monotonic()
    grader_hash = grader.identity
    try:
        todo, done = batch.prepare(sources, staging, course.modules, out, grader_hash, force, submitted,
                                   course.steps_by_module())
        # one, for either executor; the hand-ins are the class's only when there are several
        policy = RunPolicy(require, untrusted=not trust_submissions,
                           protected=(*((str(s), "the class's hand-ins") for s in submissions if len(sources) > 1),
                                      (str(out), "the results")))
        why = (policy.refusal(zygote.level, zygote.isolation) or policy.files_refusal(zygote, grader, staging)) \
            if zygote is not None and todo else None  # (on Dask, each worker checks its own)
        if why:
            raise UsageError(f"{len(todo)} submission(s) to grade, but {why}")
        if done:
            console.say(f"{len(done)} submission(s) already graded with the same inputs: skipped (--force regrades)")
        previous = changes.snapshot(out, [job.source.name for job in todo])  # before they are replaced
        counts = {"full": 0, "partial": 0, "zero": 0}
        levels: set[str] = set()
        grader_errors: dict[str, list[str]] = {}  # every submission finished, with the grader's own errors
        interrupted = False
        with tqdm(total=len(todo), unit="submission", desc="grading", file=sys.stderr, disable=None) as bar:
            def on_done(graded) -> None:  # a GradedSubmission (grading/suites/graded.py), written
                key = "full" if graded.score == top else "zero" if graded.score == 0 else "partial"
                counts[key] += 1
                levels.add(graded.isolation)
                grader_errors[graded.name] = list(graded.grader_errors)
                bar.set_postfix(counts, refresh=False)
                bar.update(1)
                note = f"  ({graded.problem})" if graded.problem else ""
                tqdm.write(f"{graded.name}: {graded.score:g}/{top:g}{note}")
                if graded_one is not None:
                    graded_one(graded.name)

            try:
                if cluster is None:
                    batch.run(grader, todo, out, zygote, n_jobs, on_done, forked)
                else:
                    _on_dask(grader, grader_hash, todo, out, on_done, cluster, policy, zygote)
            except KeyboardInterrupt:  # Ctrl-C: every job process is gone; what finished has its results.json
                interrupted = True
    finally:
        batch.cleanup(staging)
    for job in todo:  # the kit's own failures while staging one (intake/stage.py): the grader's, in its log
        if job.staged.kit_error and job.source.name in grader_errors:
            grader_errors[job.source.name].insert(0, f"while staging {job.source.path}:\n{job.staged.kit_error}")
    # interrupted: only the submissions that finished (their results.json is written) count as graded
    graded = list(grader_errors) if interrupted else [job.source.name for job in todo]
    if interrupted:  # those not regraded keep their results: nothing of theirs was replaced
        previous = {name: points for name, points in previous.items() if name in grader_errors}
    logged = grader_log.update(out, graded, grader_errors)
    stats = summary.write(course, out, sorted(logged), previous, roster, roster_file)
    if interrupted:
        console.note(f"interrupted after {len(graded)} of {len(todo)}; run the same command again to resume")
        raise Interrupted
    how = (f"{n_jobs} job(s)" if cluster is None else f"Dask at {cluster['scheduler']}" if cluster["scheduler"]
           else f"Dask ({cluster['local_workers']} local worker(s))")
    console.say(f"graded {len(todo)} submission(s) in {time.monotonic() - start:.1f} s with {how}: "
                f"{counts['full']} full marks, {counts['partial']} partial, {counts['zero']} zero; "
                f"results in {out}/, class summary in {out}/summary.md and {out}/summary.html "
                f"({stats['submissions']} submissions)")
    if stats.get("changes"):
        console.say(f"regraded {stats['regraded']} submission(s): {len(stats['changes'])} step score(s) changed "
                    f"(before/after in {out}/summary.html)")
    for level in sorted(levels):
        console.say(f"isolation: {level}")
    for line in summary.terminal_lines(stats, out):  # last: who needs a person, and why (at most 10 named)
        console.say(line)
    return logged


def _on_dask(grader, grader_hash: str, todo, out: Path, on_done, cluster: dict, policy, zygote) -> None:
    from autograder.autograde.cluster import executor
    from autograder.autograde.cluster.warm_grader import GraderMismatch

    try:
        executor.run(grader, grader_hash, todo, out, on_done, scheduler=cluster["scheduler"],
                     local_workers=cluster["local_workers"], policy=policy, zygote=zygote, tls_found=cluster["tls"])
    except GraderMismatch as exc:
        raise UsageError(str(exc)) from None
    except executor.Refused as exc:
        raise UsageError(f"{exc}\n(the submissions graded before the refusal keep their results.json)") from None
    except executor.Unfinished as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # no scheduler at that address
        raise UsageError(f"Dask: {exc}") from None
