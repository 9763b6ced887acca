"""The task each submission becomes: hand its payload to this worker's warm grader."""
from __future__ import annotations

from distributed import get_worker

from .warm_grader import NAME


def grade(payload) -> dict:
    """On a Dask worker: {"graded": the GradedSubmission (results.json, feedback page, grader errors), "worker":
    address}, or {"refused": why} when the worker's isolation is below what was required."""
    worker = get_worker()
    plugin = worker.plugins.get(NAME)
    if plugin is None:
        raise RuntimeError(f"worker {worker.address} has no {NAME} plugin: submit through "
                           "autograder.autograde.cluster.executor")
    return plugin.grade(payload)
