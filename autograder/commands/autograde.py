"""``grade autograde``: grade a class's submissions with the hidden suites, in parallel, resumably.

The options are checked here; the batch itself is ``autograder/autograde/pipeline.py``.
"""
from __future__ import annotations

from pathlib import Path

from autograder.autograde import pipeline
from autograder.usage import UsageError


def main(submissions: tuple[Path, ...] = (), out: Path = Path("results"), course_file: Path = Path("course.yml"),
         n_jobs: int | None = None, force: bool = False, times_file: Path | None = None,
         nbgrader_course: Path | None = None, assignment: str | None = None,
         trust_submissions: bool = False, require: str | None = None, executor: str = "local",
         scheduler: str | None = None, local_workers: int | None = None, roster_file: Path | None = None,
         insecure_scheduler: bool = False, tls_ca_file: Path | None = None, tls_cert: Path | None = None,
         tls_key: Path | None = None) -> int:
    """Grade ``submissions`` (or an nbgrader course's) into ``out`` (``pipeline.main`` says the exit statuses)."""
    if bool(submissions) == bool(nbgrader_course):
        raise UsageError("give SUBMISSIONS (folders, .zip archives, notebooks) or --nbgrader COURSE_DIR, not both "
                         "or neither")
    _check_executor(executor, scheduler, local_workers, n_jobs)
    tls_found = _check_scheduler(scheduler, insecure_scheduler, tls_ca_file, tls_cert, tls_key)
    return pipeline.main(tuple(submissions), out=out, course_file=course_file, n_jobs=n_jobs, force=force,
                         times_file=times_file, nbgrader_course=nbgrader_course, assignment=assignment,
                         trust_submissions=trust_submissions, require=require, executor=executor,
                         scheduler=scheduler, local_workers=local_workers, roster_file=roster_file,
                         scheduler_tls=tls_found)


def _check_executor(executor: str, scheduler: str | None, local_workers: int | None, n_jobs: int | None) -> None:
    """--executor's options go together: --scheduler or --local-workers with dask only (one of them), --jobs with
    local."""
    if executor == "local":
        if scheduler or local_workers:
            raise UsageError("--scheduler and --local-workers go with --executor dask")
        return
    if scheduler and local_workers:
        raise UsageError("--scheduler ADDRESS or --local-workers N, not both")
    if n_jobs:
        raise UsageError("--jobs is for --executor local; on Dask, the workers are the jobs (--local-workers N)")
    try:
        import distributed  # noqa: F401 - optional: the cluster extra
    except ImportError:
        raise UsageError("--executor dask needs Dask: pip install -e '.[cluster]' (docs/cluster.md)") from None


def _check_scheduler(scheduler: str | None, insecure: bool, ca_file, cert, key) -> dict | None:
    """The certificate to show ``--scheduler`` (``cluster/tls.py``); a scheduler that is not ``tls://`` is refused
    unless ``--insecure-scheduler``, and a ``tls://`` one without the course's certificate."""
    if not scheduler:
        if insecure or ca_file or cert or key:
            raise UsageError("--insecure-scheduler and --tls-* go with --scheduler ADDRESS (a LocalCluster has a key "
                             "of its own)")
        return None
    from autograder.autograde.cluster import tls

    found = tls.credentials(ca_file, cert, key)
    why = tls.refusal(scheduler, insecure, found)
    if why:
        raise UsageError(why)
    return found
