"""A task still running long past any submission's budget: its worker is stuck, so the client restarts it.

Each submission's sandbox ends itself at its wall-clock budget (``grading/runner.py``, ``worker/host.py``),
so a task can take a little over ``submission_seconds`` at most. One that runs on well past that is a
worker whose grading thread waits on something that will never come, while its event loop still answers
the scheduler's heartbeats: Dask would wait for it for ever, and so would the class's run (seen once, a
LocalCluster on a loaded machine). The client restarts that worker through its nanny; Dask runs the task
again (the same key: one results.json), and after ``distributed.scheduler.allowed-failures`` lost workers
gives it up as ``KilledWorker`` (``executor.run`` names it, the rest of the class is graded).
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def bound(submission_seconds: float) -> float:
    """How long a task may run before its worker counts as stuck: Dask's ``autograder.stall-seconds`` where
    set (``DASK_AUTOGRADER__STALL_SECONDS``, docs/cluster.md), else twice a submission's budget plus two
    minutes for staging and the feedback page on a loaded machine."""
    import dask

    said = dask.config.get("autograder.stall-seconds", None)
    return float(said) if said else 2 * float(submission_seconds) + 120


def busy_seconds(dask_worker) -> float | None:
    """On a worker (``Client.run``): how long its grading thread has been on its current work, or None."""
    from .warm_grader import NAME

    plugin = dask_worker.plugins.get(NAME)
    return plugin.busy_seconds() if plugin is not None else None


class Watch:
    """Call ``check`` every little while: a worker that holds one of ``keys`` and whose grading thread has
    been busy (starting up, or on one submission) over ``bound`` seconds is restarted. A task queued behind
    another on the same worker does not count: only the thread's own clock does (``WarmGrader.busy_seconds``)."""

    def __init__(self, client, keys, bound_seconds: float):
        self.client, self.keys, self.bound = client, set(keys), float(bound_seconds)

    def interval(self) -> float:
        """How often to call ``check``: often enough to act within a quarter of the bound."""
        return max(1.0, min(30.0, self.bound / 4))

    def check(self) -> list[str]:
        """Restart the stuck workers; return their addresses."""
        held = {worker: sorted(k for k in keys if k in self.keys) for worker, keys in self.client.processing().items()}
        held = {worker: keys for worker, keys in held.items() if keys}
        if not held:
            return []
        try:  # bounded: a worker whose event loop is blocked is the scheduler's to remove (heartbeats)
            seconds = self.client.sync(self.client._run, busy_seconds, workers=sorted(held), on_error="return",
                                       callback_timeout=10)
        except TimeoutError:
            return []
        stuck = sorted(w for w, s in seconds.items() if isinstance(s, (int, float)) and s > self.bound)
        if stuck:
            log.warning("restarting %s: %s still busy after %.0f s, past every submission's budget",
                        ", ".join(stuck), ", ".join(k for w in stuck for k in held.get(w, [])), self.bound)
            try:
                said = self.client.restart_workers(stuck, raise_for_error=False)
            except Exception as exc:  # noqa: BLE001 - a worker without a nanny: the scheduler's own limits apply
                log.warning("could not restart %s: %s", ", ".join(stuck), exc)
            else:
                log.warning("restart: %s", said)
        return stuck

    def done(self, key: str) -> None:
        self.keys.discard(key)
