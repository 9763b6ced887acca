"""``grade``: the kit's command line. Only the options live here; each verb is ``autograder.commands.<verb>.main``."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from autograder.worker.isolation import NAMES as ISOLATION_LEVELS


def _run(verb, quick_exit: bool = False, **options) -> None:
    """Run a verb's ``main``; a mistake of the user's is said as ``error: ...`` with exit status 2 (``usage.py``).
    With ``quick_exit``, the command line's own process ends as soon as the verb's output is out (quick_exit.py)."""
    import atexit
    import gc

    from autograder import quick_exit as ending
    from autograder.usage import exit_status

    # at exit, the interpreter's last collections would walk every object torch made: 0.25 s of a `grade check`,
    # 1 s of a batch; frozen, they are freed by their counts alone (as the zygote's forks do, worker/zygote.py)
    atexit.register(gc.freeze)
    code = exit_status(verb, **options)
    if quick_exit and ending.allowed(click.get_current_context().find_root().obj):
        ending.end(code)
    sys.exit(code)


def command_line() -> None:
    """The ``grade`` console script (and ``python -m autograder.cli``): ``main``, marked as the command line's own
    process, which a command may end as soon as its output is out (quick_exit.py)."""
    from autograder.quick_exit import COMMAND_LINE

    main(obj=COMMAND_LINE)


def _colored() -> bool:
    from autograder.console import colored

    return colored()


def _version() -> str:
    from autograder import __version__

    return __version__


def _course(course_file: Path, nbgrader_dir: Path | None = None, course_dir_option: bool = False) -> Path:
    """``--course`` as given, else ./course.yml, else the course an nbgrader course records (.attention-kit.yml)."""
    from click.core import ParameterSource

    from autograder import console
    from autograder.commands import course_location
    from autograder.usage import UsageError

    explicit = click.get_current_context().get_parameter_source("course_file") != ParameterSource.DEFAULT
    try:
        found, note = course_location.resolve(course_file, explicit, nbgrader_dir, course_dir_option)
    except UsageError as exc:
        click.echo(click.style("error: ", fg="red") + str(exc), err=True)
        sys.exit(2)
    if note:
        console.note(note)
    return found


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), "--version", "-V", prog_name="grade",
                      message="%(prog)s (attention autograder) %(version)s")
def main() -> None:
    """Autograded exercises for attention mechanisms (chapter 3 of Build a Large Language Model)."""


@main.command()
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON, for machines.")
@click.option("--step", "steps", multiple=True,
              help="Only this step (module.name, or its name alone when no other module has it) or module; repeatable.")
@click.option("--html", "html_file", is_flag=False, flag_value="", default=None, metavar="[FILE]",
              help="Also write the feedback page (pictures of failing cases) to FILE [default: ./feedback.html; run "
                   "inside the checked folder, beside it: never among your exercises].")
@click.option("--watch", is_flag=True, help="Check again each time a checked file or notebook is saved (Ctrl-C stops).")
def check(path: Path | None, as_json: bool, steps: tuple[str, ...], html_file: str | None, watch: bool) -> None:
    """Check your exercises against the public cases: a folder (default ./exercises, or this folder when it holds
    them), a notebook (one per module, or one for all), or a .zip, as grade autograde takes them."""
    from autograder.commands import check as verb

    page = None if html_file is None else True if html_file == "" else Path(html_file)
    _run(verb.main, quick_exit=True, path=path, steps=steps, as_json=as_json, color=_colored(), html_file=page,
         watch=watch)


@main.command()
@click.option("--course", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path), show_default=True)
def assign(course_file: Path) -> None:
    """Write exercises/ from solutions/ and record the public cases for grade check."""
    from autograder.commands import assign as verb

    _run(verb.main, course_file=_course(course_file))


@main.command()
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
@click.option("--require-isolation", "require", type=click.Choice(ISOLATION_LEVELS),
              help="Refuse to grade below this isolation level (docs/isolation.md), here or on any Dask worker.")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="local: --jobs processes on this machine; dask: a Dask cluster (pip install -e '.[cluster]', "
                   "docs/cluster.md).")
@click.option("--scheduler", metavar="ADDRESS",
              help="With --executor dask: the scheduler (tls://host:8786, with the course's certificate: --tls-*).")
@click.option("--tls-ca-file", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="With --scheduler: the course's CA certificate (or Dask's distributed.comm.tls.ca-file).")
@click.option("--tls-cert", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="With --scheduler: this client's certificate (or Dask's distributed.comm.tls.client.cert).")
@click.option("--tls-key", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="With --scheduler: this client's key, mode 600 (or Dask's distributed.comm.tls.client.key).")
@click.option("--insecure-scheduler", is_flag=True,
              help="Allow a --scheduler without TLS (tcp://): anyone who reaches its port runs code on the workers; "
                   "only on a network private to you.")
@click.option("--local-workers", type=click.IntRange(min=1), metavar="N",
              help="With --executor dask: a LocalCluster of N worker processes  [default: the number of cores]")
@click.option("--roster", "roster_file", metavar="FILE", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="Class list CSV (as grade export takes): the class summary also names submissions that match no "
                   "roster student and roster students with no submission.")
def autograde(**options) -> None:
    """Grade SUBMISSIONS (folders, .zip archives, notebooks, or folders of them) with the hidden suites.

    Each submission's results.json is written as soon as it is graded; a re-run skips submissions
    already graded with the same submission and grader (content hashes), so an interrupted batch
    resumes where it stopped.
    """
    from autograder.commands import autograde as verb

    options["course_file"] = _course(options["course_file"], options["nbgrader_course"])
    _run(verb.main, quick_exit=True, **options)


@main.command()
@click.option("--results", "results_dir", required=True, metavar="DIR", type=click.Path(path_type=Path),
              help="The folder grade autograde wrote: DIR/<submission name>/results.json.")
@click.option("--roster", "roster_file", required=True, metavar="FILE", type=click.Path(path_type=Path),
              help="Class list CSV (name, email, login, id, sis_id, section; see docs/export.md).")
@click.option("--format", "fmt", required=True, type=click.Choice(("canvas", "moodle", "csv")),
              help="The gradebook file to write.")
@click.option("--out", "out", metavar="FILE", type=click.Path(path_type=Path),
              help="Write the file here (default: standard output).")
@click.option("--course", "course_file", default=Path("course.yml"), metavar="FILE", type=click.Path(path_type=Path),
              show_default=True, help="The course definition (points and late_policy).")
@click.option("--assignment", help="Title of the grade column (default: course.yml's title). "
                                   "Canvas: 'Title (assignment id)' updates that assignment.")
@click.option("--points", metavar="N", type=click.FloatRange(min=0, min_open=True),
              help="Rescale scores so that a full score is worth this much (default: course.yml's points).")
@click.option("--missing", type=click.Choice(["blank", "zero"]), default="blank", show_default=True,
              help="Roster students without a submission: no grade, or 0.")
@click.option("--ungraded", type=click.Choice(["blank", "zero"]), default="blank", show_default=True,
              help="Hand-ins the kit never graded (a corrupt archive, an empty folder, a broken notebook) and no "
                   "person decided (grade decide): no grade, or the kit's score (0 for what it could not grade).")
@click.option("--times", "times_file", metavar="FILE", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="CSV 'submission,submitted_at' from the LMS: these times win over the ones in results.json.")
@click.option("--moodle-user", type=click.Choice(["email", "idnumber", "username"]), default="email",
              show_default=True, help="Moodle format: the user field the first column holds.")
def export(**options) -> None:
    """Write the grades of DIR's results.json files as a Canvas, Moodle or plain CSV gradebook file."""
    from autograder.commands import export as verb

    options["course_file"] = _course(options["course_file"])
    _run(verb.main, **options)


@main.command()
@click.argument("name")
@click.option("--results", "results_dir", default=Path("results"), metavar="DIR", type=click.Path(path_type=Path),
              show_default=True, help="The folder grade autograde wrote: DIR/NAME/results.json.")
@click.option("--score", type=float, metavar="POINTS", help="The score to give, in course.yml's points (the late "
                                                              "policy applies to it as to the kit's).")
@click.option("--excuse", is_flag=True, help="Excuse the hand-in: no grade (Canvas: EX).")
@click.option("--reason", metavar="TEXT",
              help="Why (required): kept with the decision, shown in the summary and reports.")
@click.option("--clear", is_flag=True, help="Remove the decision: the kit's result counts again.")
@click.option("--course", "course_file", default=Path("course.yml"), metavar="FILE", type=click.Path(path_type=Path),
              show_default=True, help="The course definition (its points).")
def decide(**options) -> None:
    """Record a person's decision on hand-in NAME (a score or an excuse, with the reason): grade export and grade lti
    push use it in place of the kit's result; a regrade keeps it."""
    from autograder.commands import decide as verb

    options["course_file"] = _course(options["course_file"])
    _run(verb.main, **options)


@main.command()
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Folder for the student bundle (created; a previous bundle there is replaced).")
@click.option("--zip", "zip_path", type=click.Path(path_type=Path), default=None,
              help="Where to write the zip of the bundle [default: OUT.zip next to OUT].")
@click.option("--course", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path),
              show_default=True, help="The course definition.")
def release(**options) -> None:
    """Build the student bundle: exercises, public checks, grade check; no solution, no hidden case."""
    from autograder.commands import release as verb

    options["course_file"] = _course(options["course_file"])
    _run(verb.main, **options)


@main.command()
@click.option("--out", "out", default=Path("autograder.zip"), type=click.Path(path_type=Path), show_default=True,
              help="Where to write the autograder zip to upload to Gradescope.")
@click.option("--course", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path),
              show_default=True, help="The course definition.")
def gradescope(**options) -> None:
    """Build the Gradescope autograder zip (instructor-only: it holds the solutions and hidden suites)."""
    from autograder.commands import gradescope as verb

    options["course_file"] = _course(options["course_file"])
    _run(verb.main, **options)


@main.command()
@click.option("--course-dir", "dest", metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="The nbgrader course folder to write (created if missing).")
@click.option("--course", "course_file", default=Path("course.yml"), metavar="FILE", type=click.Path(path_type=Path),
              show_default=True, help="The course definition, as for every other verb.")
@click.option("--assignment", default=None, help="The assignment name (default: the unit in course.yml).")
@click.option("--force", is_flag=True, help="Overwrite source/<assignment>/ and nbgrader_config.py.")
def nbgrader(**options) -> None:
    """Write an nbgrader course: DIR/nbgrader_config.py and DIR/source/<assignment>/<module>.ipynb."""
    from autograder.commands import nbgrader as verb

    options["course_file"] = _course(options["course_file"], course_dir_option=True)
    if options["dest"] is None:
        raise click.UsageError("Missing option '--course-dir' (the nbgrader course folder to write, such as "
                               "~/attention-course).")
    _run(verb.main, **options)



@main.command()
@click.argument("submissions", nargs=-1, type=click.Path(path_type=Path))
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Write DIR/similarity.html and DIR/similarity.json.")
@click.option("--against", type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="Also compare with last term's submissions (a folder of them, or an nbgrader course).")
@click.option("--course", "course_file", default=Path("course.yml"), type=click.Path(path_type=Path), show_default=True)
@click.option("--nbgrader", type=click.Path(path_type=Path, file_okay=False), help="An nbgrader course's submitted/.")
@click.option("--assignment", help="With --nbgrader: the assignment (default: the only one submitted).")
@click.option("--top", default=50, show_default=True, help="Pairs shown side by side in the HTML report.")
def similarity(**options) -> None:
    """Rank pairs of SUBMISSIONS by code shared beyond boilerplate (read, never run). Never a verdict."""
    from autograder.commands import similarity as verb

    options["course_file"] = _course(options["course_file"], options["nbgrader"])
    _run(verb.main, **options)


@main.group()
def lti() -> None:
    """Grades straight into the LMS through LTI 1.3 (AGS and NRPS): pip install -e '.[lti]'; docs/lti.md."""


_STORE = click.option("--store", "store_dir", metavar="DIR", type=click.Path(path_type=Path, file_okay=False),
                      envvar="GRADE_LTI_STORE", help="The tool's store (keys, platforms, courses, push ledger) "
                                                     "[default: ~/.attention-autograder/lti; env GRADE_LTI_STORE].")


@lti.command("keys")
@_STORE
@click.option("--url", metavar="URL", help="The public address of grade lti serve (https://...), to print the URLs "
                                           "to paste into the LMS.")
@click.option("--rotate", is_flag=True, help="Make a new key pair (the LMS must then fetch the new JWKS).")
def lti_keys(**options) -> None:
    """Make the tool's key pair (private key mode 600, never printed); print its JWKS and the LMS form's values."""
    from autograder.commands import lti as verb

    _run(verb.keys, **options)


@lti.command("register")
@_STORE
@click.option("--issuer", required=True, help="The platform's issuer (Canvas: https://canvas.instructure.com).")
@click.option("--client-id", required=True,
              help="The client id the LMS gave the tool (Canvas: the developer key's id).")
@click.option("--login-url", required=True, help="The platform's OIDC authorization endpoint.")
@click.option("--token-url", required=True, help="The platform's OAuth2 access token endpoint.")
@click.option("--jwks-url", required=True, help="The platform's public keyset URL.")
@click.option("--audience", default=None, help="The token endpoint's audience when it is not --token-url (Moodle, "
                                               "Brightspace).")
@click.option("--deployment-id", "deployment_ids", multiple=True, metavar="ID", help="A deployment id; repeatable.")
def lti_register(**options) -> None:
    """Register a platform (an LMS) and its deployments with the tool."""
    from autograder.commands import lti as verb

    _run(verb.register, **options)


@lti.command("serve")
@_STORE
@click.option("--host", default="127.0.0.1", show_default=True, help="Listen on this address (behind an HTTPS proxy).")
@click.option("--port", default=8000, show_default=True, type=int, help="Listen on this port.")
@click.option("--url", metavar="URL", help="The public address the LMS reaches [default: the one grade lti keys "
                                           "recorded].")
@click.option("--idle-timeout", type=click.IntRange(min=1), metavar="SECONDS",
              help="Close a connection that has sent nothing for this long [default: 30].")
def lti_serve(**options) -> None:
    """Run the tool's OIDC login, launch and JWKS endpoints: launch the kit once from each LMS course."""
    from autograder.commands import lti as verb

    _run(verb.serve, **options)


@lti.command("courses")
@_STORE
def lti_courses(**options) -> None:
    """List the LMS courses launched so far (the names --lms-course takes)."""
    from autograder.commands import lti as verb

    _run(verb.courses, **options)


@lti.command("push")
@click.argument("results_dir", metavar="RESULTS", type=click.Path(path_type=Path))
@click.option("--lms-course", "course", required=True, metavar="NAME",
              help="The LMS course, as grade lti courses names it.")
@_STORE
@click.option("--course", "course_file", default=Path("course.yml"), metavar="FILE",
              type=click.Path(path_type=Path), show_default=True,
              help="The course definition (points, late_policy, lti), as for every other verb.")
@click.option("--match", type=click.Choice(["email", "login", "sourcedid", "user_id"]), default=None,
              help="The LMS member field a submission name is [default: course.yml's lti.match, else email].")
@click.option("--resource-id", default=None, help="The line item's stable resourceId [default: course.yml's unit].")
@click.option("--label", default=None, help="The gradebook column's title when it is created [default: course.yml's "
                                            "title].")
@click.option("--dry-run", is_flag=True, help="Show what would be posted; post nothing, create nothing.")
@click.option("--ungraded", type=click.Choice(["blank", "zero"]), default="blank", show_default=True,
              help="Hand-ins the kit never graded and no person decided (grade decide): post nothing, or the kit's "
                   "score (0 for what it could not grade).")
def lti_push(**options) -> None:
    """Post RESULTS' scores to the LMS course's gradebook (NRPS to match, AGS to post); only what changed."""
    from autograder.commands import lti as verb

    options["course_file"] = _course(options["course_file"])
    _run(verb.push, **options)


if __name__ == "__main__":  # pragma: no cover
    command_line()
