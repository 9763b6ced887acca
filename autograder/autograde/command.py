"""``grade autograde``: grade a class's submissions with the hidden suites, in parallel, resumably."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click


def _fail(message: str) -> None:
    click.echo(click.style("error: ", fg="red") + message, err=True)
    sys.exit(2)


@click.command("autograde")
@click.argument("submissions", nargs=-1, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Write DIR/<name>/results.json (Gradescope format) and DIR/summary.{json,md}.")
@click.option("--course", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path),
              show_default=True, help="The course definition.")
@click.option("--jobs", "-j", "n_jobs", type=click.IntRange(min=1), default=None,
              help="Submissions graded in parallel  [default: the number of cores]")
@click.option("--force", is_flag=True, help="Regrade submissions already graded with the same inputs.")
@click.option("--times", "times_file", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="CSV 'submission,submitted_at' from the LMS: when each was handed in (a submission's own files "
                   "never say; without a time, grade export counts it on time and names it).")
@click.option("--nbgrader", "nbgrader_course", type=click.Path(path_type=Path, file_okay=False),
              help="Grade an nbgrader course's submitted/<student>/<assignment>/ notebooks in the sandbox "
                   "(student id = result name, nbgrader's timestamp = submission time).")
@click.option("--assignment", help="With --nbgrader: the assignment (default: the only one submitted).")
@click.option("--trust-submissions", is_flag=True,
              help="Grade several submissions even where the isolation (rlimits) cannot keep one submission's "
                   "files, IPC and processes from the next: only for code you trust.")
def autograde_command(submissions: tuple[Path, ...], out: Path, course_file: Path, n_jobs: int | None,
                      force: bool, times_file: Path | None, nbgrader_course: Path | None, assignment: str | None,
                      trust_submissions: bool) -> None:
    """Grade SUBMISSIONS (folders, .zip archives, notebooks, or folders of them) with the hidden suites.

    Each submission's results.json is written as soon as it is graded; a re-run skips submissions
    already graded with the same submission and grader (content hashes), so an interrupted batch
    resumes where it stopped.
    """
    from autograder.grading.zygote_client import Zygote  # noqa: PLC0415 - no torch: the zygote starts first

    from autograder.intake import times  # noqa: PLC0415

    from autograder.intake.discover import nbgrader_submissions  # noqa: PLC0415

    if bool(submissions) == bool(nbgrader_course):
        _fail("give SUBMISSIONS (folders, .zip archives, notebooks) or --nbgrader COURSE_DIR, not both or neither")
    try:
        submitted = times.read(times_file) if times_file else {}
    except times.TimesError as exc:
        _fail(str(exc))
    found = None
    if nbgrader_course:
        sources, stamps, problems = nbgrader_submissions(nbgrader_course, assignment)
        found, submitted = (sources, problems), {**stamps, **submitted}
    zygote = Zygote()  # it imports torch while we import ours and load the course
    try:
        grader = _load(course_file)
        logged = _grade(grader, submissions, out, n_jobs or os.cpu_count() or 1, force, zygote, trust_submissions,
                        submitted, found)
        if found and found[0]:
            _to_nbgrader(nbgrader_course, found[0], out)
    finally:
        zygote.close()
    if logged:  # a bug of the grader's must not pass for a student's failure, nor for a clean run
        click.echo(click.style("error: ", fg="red") + f"the grader itself failed while grading {len(logged)} "
                   f"submission(s) ({', '.join(sorted(logged)[:10])}): their results tell the students so; the "
                   f"tracebacks are in {out / 'grader_errors.log'}", err=True)
        sys.exit(3)


def _to_nbgrader(course_dir: Path, sources, out: Path) -> None:
    """Each student's points into nbgrader's gradebook, their feedback into autograded/ notebooks."""
    from autograder.outputs.results import ResultsError, read  # noqa: PLC0415

    try:
        from autograder.nbgrader_course import gradebook  # noqa: PLC0415
        import nbgrader.api  # noqa: F401, PLC0415
    except ImportError:
        click.echo(click.style("warning: ", fg="yellow") + "nbgrader is not installed here: the results are in "
                   f"{out}/, but nbgrader's gradebook was not updated (pip install nbgrader)", err=True)
        return
    results = {}
    for source in sources:
        try:
            results[source.name] = read(out / source.name / "results.json").as_json()
        except ResultsError:
            continue
    assignment = sources[0].path.name
    try:
        cells = gradebook.write(course_dir, assignment, results)
    except gradebook.GradebookError as exc:
        _fail(str(exc))
    for source in sources:
        if source.name in results:
            gradebook.feedback_notebooks(course_dir, assignment, source.name, source.path, results[source.name])
    click.echo(f"nbgrader: {cells} grades of {len(results)} student(s) written to the gradebook of {course_dir}; "
               f"feedback notebooks in {course_dir}/autograded/ (nbgrader generate_feedback {assignment})")


def _load(course_file: Path):
    from autograder.course import CourseError  # noqa: PLC0415

    from .session import Grader  # noqa: PLC0415 - imports torch

    try:
        return Grader(course_file)
    except CourseError as exc:
        _fail(str(exc))


def _grade(grader, submissions: tuple[Path, ...], out: Path, n_jobs: int, force: bool, zygote,
           trust_submissions: bool = False, submitted: dict[str, str] | None = None, found=None) -> dict[str, str]:
    from tqdm import tqdm  # noqa: PLC0415

    from autograder.intake.discover import discover  # noqa: PLC0415

    from . import batch, fingerprint, grader_log, summary  # noqa: PLC0415

    course = grader.course
    sources, problems = found if found is not None else discover(list(submissions), course.modules)
    for problem in problems:
        click.echo(click.style("skipped: ", fg="yellow") + problem, err=True)
    if not sources:
        _fail("no submission to grade")
    staging = batch.staging_dir(out)
    top = course.max_points()
    start = time.monotonic()
    try:
        todo, done = batch.prepare(sources, staging, course.modules, out, fingerprint.grader(grader.course_file, course),
                                   force, submitted, course.steps_by_module())
        if len(todo) > 1 and zygote.level == "rlimits" and not trust_submissions:
            _fail(f"{len(todo)} submissions to grade, but the isolation here is only {zygote.isolation}.\n"
                  "At this level student code runs as you: what one submission leaves (files, IPC objects, "
                  "processes) could reach the next, so grade autograde grades one submission per run. Run it as "
                  "root on Linux (namespaces), or pass --trust-submissions for code you trust.")
        if done:
            click.echo(f"{len(done)} submission(s) already graded with the same inputs: skipped (--force regrades)")
        counts = {"full": 0, "partial": 0, "zero": 0}
        levels: set[str] = set()
        grader_errors: dict[str, list[str]] = {}
        with tqdm(total=len(todo), unit="submission", desc="grading", file=sys.stderr, disable=None) as bar:
            def on_done(item: dict) -> None:
                key = "full" if item["score"] == top else "zero" if item["score"] == 0 else "partial"
                counts[key] += 1
                levels.add(item["isolation"])
                grader_errors[item["name"]] = item.get("grader_errors", [])
                bar.set_postfix(counts, refresh=False)
                bar.update(1)
                note = f"  ({item['problem']})" if item["problem"] else ""
                tqdm.write(f"{item['name']}: {item['score']:g}/{top:g}{note}")

            batch.run(grader, todo, out, zygote, n_jobs, on_done)
    finally:
        batch.cleanup(staging)
    logged = grader_log.update(out, [job.source.name for job in todo], grader_errors)
    stats = summary.write(course, out, sorted(logged))
    click.echo(f"graded {len(todo)} submission(s) in {time.monotonic() - start:.1f} s with {n_jobs} job(s): "
               f"{counts['full']} full marks, {counts['partial']} partial, {counts['zero']} zero; "
               f"results in {out}/, class summary in {out}/summary.md ({stats['submissions']} submissions)")
    for level in sorted(levels):
        click.echo(f"isolation: {level}")
    return logged
