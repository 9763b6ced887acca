"""The client side of ``--executor dask``: submit each staged submission, write each results.json as it completes.

results.json (and feedback.html, first) is written here, on the client, atomically, as each future completes: the
workers need no access to the results folder (nor to the staging folder: the staged bytes travel with the task), and
each submission's results.json is written exactly once per run, whatever the cluster did to get it (a task retried after
its worker died is still one future, one result, one write). A client killed half-way keeps every results.json written
so far; a re-run skips them (batch.prepare), as with ``--jobs``.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import threading
from pathlib import Path

from autograder.autograde.batch import children, warm_pictures, write
from autograder.sandbox import uids
from autograder.sandbox.zygote import ClonesForForks
from autograder.worker import tempdirs
from autograder.autograde.run_policy import RunPolicy

from . import inherited, stalls, tls, unprivileged
from .payload import Payload


class Refused(RuntimeError):
    """A worker refused to grade: its isolation is below what was required."""


class Unfinished(RuntimeError):
    """Submissions Dask gave up on (their workers lost too often); every other one is graded."""


#: Dask's housekeeping, made rarer: no statistical profiler sampling every thread each 10 ms, the event loop's
#: tick, system and memory monitors every second or two instead of every 20, 500 and 100 ms. A task here
#: takes about a second, and student code runs in the sandbox, under its own limits, not in the worker.
#: Idle, a LocalCluster of 2 workers then costs 1% of a core instead of 7% (bench/RESULTS.md).
QUIET = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
         "distributed.admin.system-monitor.interval": "2s", "distributed.worker.memory.monitor-interval": "1s"}
#: How long the end of a run waits for the workers to drop their warm grader (``withdraw``): they are idle
#: then, unless the run was interrupted, when each first finishes the submission it has.
WITHDRAW_SECONDS, WITHDRAW_SECONDS_INTERRUPTED = 60, 5
#: Dask's web pages and metrics, off: they have no login, and would list the submissions, the workers' logs and
#: the stacks of what they run to anyone who can reach the port (tls.py)
NO_PAGES = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}
#: A LocalCluster's workers are also forked warm from the client (inherited.py).
LOCAL_CONFIG = {**QUIET, **NO_PAGES, "distributed.worker.multiprocessing-method": "fork"}


@contextlib.contextmanager
def local_cluster(n_workers: int, grader=None, grader_hash: str | None = None, zygote=None):
    """A Client on a LocalCluster of ``n_workers`` processes (one thread each: one submission at a time each).

    Given the client's warm ``grader`` and ``zygote``, the workers are forked from this process and each
    takes a clone of the zygote (inherited.py); without them, each worker starts its own.

    Only this process and its workers can talk to the cluster: TLS with a key made for the run, in memory
    (``tls.for_a_local_cluster``), and no web pages. Run as root, the workers drop root as they start
    (``unprivileged.py``): their zygote clones keep it. tests/system/test_cluster_security.py shows both.
    """
    import dask
    from distributed import Client, LocalCluster

    clones: ClonesForForks | None = None
    # the workers' scratch space, removed with the run (swept if killed), where their uid can reach it
    scratch = tempdirs.make("grade-dask-", unprivileged.scratch_base() if unprivileged.wanted() else None)
    uid_lock = None
    try:
        config = {**LOCAL_CONFIG, "temporary-directory": str(scratch)}
        if unprivileged.wanted():  # the workers run as the first uid of a block held for the run, in a folder of it
            uid, uid_lock = uids.claim()
            config["temporary-directory"] = str(unprivileged.give_scratch(scratch, uid))
            config[unprivileged.UID_KEY] = uid
        if grader is not None and zygote is not None:
            grader.warm_cache()  # reference answers, computed once here and inherited by every worker
            clones = ClonesForForks(zygote, n_workers)
            inherited.offer(grader, grader_hash, clones)
        with dask.config.set(config), _ctrl_c_for_the_client_only(), \
                LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                             host="127.0.0.1", security=tls.for_a_local_cluster(),
                             preload=[unprivileged.__name__]) as cluster:
            inherited.withdraw()  # the clones are the workers' now: nothing left for us to close
            with Client(cluster) as client:
                yield client
    finally:
        if clones is not None:
            clones.close()
        shutil.rmtree(scratch, ignore_errors=True)
        if uid_lock is not None:
            os.close(uid_lock)


@contextlib.contextmanager
def _ctrl_c_for_the_client_only():
    """While the block runs, Ctrl-C (SIGINT) is acted on by this process alone, not by a LocalCluster's workers.

    The workers are forked from this process with its handlers, so this one is theirs too, and does nothing
    there: Ctrl-C on a terminal reaches every process of the foreground group, and an interrupted worker's
    event loop falls over (its nanny then starts it again). The client decides, and kills them
    (``kill_local_workers``). In the client, the handler that was there before does what it did.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    client, before = os.getpid(), signal.getsignal(signal.SIGINT)

    def handler(signum, frame) -> None:
        if os.getpid() != client or before == signal.SIG_IGN:
            return
        if callable(before):
            before(signum, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def connect(scheduler: str | None, local_workers: int | None, grader=None, grader_hash=None, zygote=None,
            tls_found: dict | None = None):
    """A Client on the scheduler at ``scheduler`` (with the course's certificate: ``tls.py``), or on a
    LocalCluster of ``local_workers`` processes (secured with a key of the run's own)."""
    from distributed import Client

    if scheduler:
        return contextlib.closing(Client(scheduler, timeout=60,
                                         security=tls.for_a_scheduler(scheduler, tls_found or {})))
    return local_cluster(local_workers or 1, grader, grader_hash, zygote)


def run(grader, grader_hash: str, jobs: list, out: Path, on_done, *, scheduler: str | None = None,
        local_workers: int | None = None, policy: RunPolicy = RunPolicy(), zygote=None,
        tls_found: dict | None = None) -> None:
    """Grade ``jobs`` (batch.Job) on Dask; write each results.json here and call ``on_done`` with each
    ``GradedSubmission``. However the run ends, the warm grader leaves the workers (``withdraw``).

    ``policy``: the run's (each worker checks it against its own zygote). ``zygote``: the client's, for a
    LocalCluster whose workers are forked from the client. ``tls_found``: the certificate shown to
    ``scheduler`` (``tls.credentials``; ``tls.refusal`` has said yes to it).
    """
    from distributed import wait
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    from .warm_grader import WarmGrader
    from .tasks import grade

    if not jobs:
        return
    warm_pictures()  # before a LocalCluster's workers are forked from us: see batch.warm_pictures
    lost = []
    with connect(scheduler, local_workers, grader, grader_hash, zygote, tls_found) as client:
        client.register_plugin(WarmGrader(str(grader.course_file), grader_hash))
        futures: dict = {}
        killed, end = False, WITHDRAW_SECONDS
        try:
            # One key per submission and content: a resubmitted task (worker lost) is the same task.
            futures = {client.submit(grade, Payload.pack(job, policy), pure=False,
                                     key=f"grade-{job.source.name}-{job.digest}"): job for job in jobs}
            watch = stalls.Watch(client, [f.key for f in futures],
                                 stalls.bound(grader.course.limits.submission_seconds))
            pending = set(futures)
            while pending:
                try:  # never a wait without an end: a stuck worker is restarted (stalls.py)
                    finished, pending = wait(pending, timeout=watch.interval(), return_when="FIRST_COMPLETED")
                except TimeoutError:
                    watch.check()
                    continue
                for future in finished:
                    watch.done(future.key)
                    try:
                        answer = future.result()
                    except (KilledWorker, FutureCancelledError) as exc:  # the rest of the class goes on
                        lost.append((futures[future].source.name, exc))
                        continue
                    if "refused" in answer:
                        raise Refused(answer["refused"])
                    write(out, answer["graded"])
                    on_done(answer["graded"])
        except KeyboardInterrupt:  # Ctrl-C: a LocalCluster's workers are killed now, not after their task
            killed, end = kill_local_workers(client, zygote), WITHDRAW_SECONDS_INTERRUPTED
            raise
        finally:
            client.cancel(list(futures))
            if not killed:
                withdraw(client, end)
    if lost:
        names = ", ".join(name for name, _exc in lost)
        raise Unfinished(f"{len(lost)} submission(s) not graded: the Dask workers grading them were lost "
                         f"again and again ({names}; {type(lost[0][1]).__name__}: {lost[0][1]}). Every other "
                         "submission has its results.json; run the same command again to grade these.")


def withdraw(client, seconds: float) -> None:
    """Unregister the WarmGrader: the scheduler no longer gives it to a worker that joins, and each worker's
    teardown stops its zygote and forgets the grader, its course and its reference answers
    (``warm_grader.forget``), once its submission in progress, if any, is graded. Waited for up to
    ``seconds``; the workers go on without us after that (an interrupted run does not wait for them).

    Stops: a warm grader left on a cluster that outlives the run, for any later client to read.
    Shown by tests/system/test_cluster_security.py (after a run, nothing of the grader is left on the workers)."""
    from .warm_grader import NAME

    try:
        client.sync(client._unregister_worker_plugin, name=NAME, callback_timeout=seconds)
    except Exception as exc:  # noqa: BLE001 - the scheduler lost, or slow: said, and the run's outcome stands
        logging.getLogger(__name__).warning("could not remove the warm grader from the workers: %s: %s",
                                            type(exc).__name__, exc)


def kill_local_workers(client, zygote=None) -> bool:
    """Kill the worker processes of the client's LocalCluster at once, telling their nannies not to start them
    again; a remote cluster's workers are not ours to kill (the client's futures are cancelled: each worker
    finishes the submission it has and takes no other).

    As ``batch.halt`` does for --jobs: the workers are frozen first, then their zygote clones (children of
    the client's ``zygote``) are killed, which takes their sandboxes down, then the workers: no worker sees
    its sandbox die, no sandbox answers a worker that is gone. Whether it killed any (a LocalCluster's).
    """
    logging.getLogger("distributed").setLevel(logging.ERROR)  # workers lost, tasks cancelled: as we meant
    cluster = getattr(client, "cluster", None)
    pids = []
    for nanny in list(getattr(cluster, "workers", {}).values()):
        with contextlib.suppress(Exception):
            nanny.close_gracefully(reason="interrupted")  # no restart when its worker dies
        pid = getattr(nanny, "pid", None)
        if pid:
            pids.append(pid)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
    if pids and getattr(zygote, "process", None) is not None:
        for clone in children(zygote.process.pid):
            with contextlib.suppress(OSError):
                os.kill(clone, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return bool(pids)
