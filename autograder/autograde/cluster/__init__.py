"""``grade autograde --executor dask``: grade a class on a Dask cluster (a LocalCluster, or Slurm/PBS/SGE nodes
through dask-jobqueue), with the same sandbox, the same results.json and the same resume as ``--jobs``.

- ``payload.py``: what travels with each task (the staged files as bytes, the submission's identity);
- ``warm_grader.py``: the WorkerPlugin that keeps one warm grading process per Dask worker (zygote, course,
  reference answers), started once;
- ``tasks.py``: the task each submission becomes;
- ``executor.py``: the client side: connect, submit, write each results.json as its future completes.

Needs the ``[cluster]`` extra (dask, distributed, dask-jobqueue); see docs/cluster.md.
"""
