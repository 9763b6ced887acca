"""docs/cluster.md's Slurm set-up, run here as the documentation says, with one node's job run as Slurm would.

``documented_cluster(base)`` makes the course's certificates with the documentation's commands
(tests/support/course_certificates.py), runs the documentation's ``slurm_grading.py`` (its ``make_cluster``: a real
SLURMCluster, whose scheduler runs in this process) with ``/shared/attention`` read as ``base/shared/attention``,
and starts the worker command of its job script with one worker instead of eight (this machine has two cores).
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import course_certificates
from tests.conftest import ROOT


@dataclass
class Documented:
    cluster: object  # the SLURMCluster
    script: str  # its job script
    certificates: course_certificates.Certificates
    course: Path  # what /shared/attention became


def documented_code(course: Path) -> str:
    text = (ROOT / "docs" / "cluster.md").read_text()
    code = re.search(r"```python\n(# slurm_grading\.py.*?)```", text, re.S).group(1)
    return code.replace("/shared/attention/.venv/bin/python", sys.executable).replace("/shared/attention", str(course))


def worker_command(script: str) -> str:
    return script.strip().splitlines()[-1]


@contextlib.contextmanager
def documented_cluster(base: Path):
    """Yield a ``Documented`` once its one worker (a Slurm node's job, run here) is started."""
    course = base / "shared" / "attention"
    course.mkdir(parents=True)
    certificates = course_certificates.make(course)
    namespace = {"__name__": "slurm_grading"}
    exec(compile(documented_code(course), "slurm_grading.py", "exec"), namespace)  # noqa: S102 - the documentation's own code
    cluster = namespace["make_cluster"](port=0)  # the scheduler binds a port of its own: none to lose to another
    worker = None
    try:
        script = cluster.job_script()
        command = worker_command(script)
        scratch = base / "node-tmp"
        scratch.mkdir()
        prologue = script.split(command)[0].split("\n\n", 1)[-1]
        worker = subprocess.Popen(["bash", "-c", prologue + "\n" + command.replace("--nworkers 8", "--nworkers 1")],
                                  env={**os.environ, "TMPDIR": str(scratch)}, cwd=base, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        yield Documented(cluster, script, certificates, course)
    finally:
        if worker is not None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
        cluster.close()
