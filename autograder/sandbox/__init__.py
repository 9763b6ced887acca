"""The sandbox's trusted side: the grader's half of each process boundary drawn in ``worker/``.

``worker/`` is what runs untrusted (loaded by the zygote as a folder of its own; it imports nothing of
the rest). Each of its boundaries has its other half here, under the same name:

- ``zygote.py``: starts the zygote (``worker/zygote.py``), clones it and asks it for hosts;
- ``host.py``: a submission's sandbox and its workers, as the grader talks to them (``worker/host.py``
  and the workers it forks, ``worker/child.py``);
- ``spawned.py``: a worker started as a process of its own where there is no ``fork`` (``worker/spawned.py``);
- ``reference_server.py``: the handle on the reference worker and the check of every stand-in call
  relayed to it (``worker/reference_server.py``).

And what those halves need and nothing else does: ``local_zygote.py`` (``grade check``'s zygote, its own
process), ``uids.py`` (the uid blocks zygotes claim), ``per_request.py`` (facts derived once per request)
and ``standin_answers.py`` (the reference worker's answers kept here). This folder imports ``worker/``
only. It ships to students (``grade check`` runs submissions through it), but for the reference worker's handle and
the separate zygote's client, which ``grade check`` never runs (``release/student_code.py: NOT_SHIPPED_MODULES``);
it holds no reference code.
"""
