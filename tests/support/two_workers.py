"""How ``make test`` shares the suite between its pytest-xdist workers (``-n 4 --dist loadscope``; any number).

- A test module is one unit of work, run whole by one worker: its module-scoped fixtures (a graded class, a
  cluster, a course) are built once. The modules of ``ONE_BY_ONE`` are the exception: their tests are long and
  independent of each other (one document each), so each is a unit of its own.
- The units that take longest start first (``LONGEST``, measured with ``--durations``), so that the workers
  finish together instead of one waiting for the other's last long module. A module not named there keeps its
  place after them, and ``tests/unit/``'s short modules, collected last, fill the end; the order changes when a
  test runs, never what it checks.
- Tests that use a machine-wide resource (fixed paths in /tmp, /run/lock, System V IPC) take the machine-wide lock
  (tests/support/machine_lock.py) as they do beside another run of the suite; each cluster listens on a free port
  of its own (``free_port``). The modules that run code as the local users (tests/support/local_users.py) and
  check what those users own in /tmp and /dev/shm afterwards are one unit (``SAME_WORKER``): one of them running as
  ``attn-student`` would otherwise leave files the other counts as its own run's.

The units are this module's scheduler's (``pytest_xdist_make_scheduler``: xdist's load-by-module scheduling with
these units), not ``xdist_group`` marks: pytest 9 keeps a test's id where xdist 3.8's ``--dist loadgroup`` no longer
renames it, so its groups are silently ignored (each test then goes anywhere, a module's fixtures built twice).

Without xdist (``pytest`` as is, ``-p no:xdist``) nothing here changes anything.
"""
from __future__ import annotations

import pytest

#: the longest units first (seconds, measured in one serial run of the slow stage on a loaded 2-core machine)
LONGEST = [
    "tests/integration/test_adversarial.py",  # 387 s (the 77 attempts graded, then the zips, the tricklers...)
    "tests/system/test_nbgrader.py",  # 280 s
    "tests/system/test_normal_user_journeys.py",  # 200-260 s, make demo's install as a normal user the most of it
    "tests/system/test_normal_user.py",
    "tests/integration/test_autograde_corpus.py",  # 178 s
    "tests/system/test_bench_nbgrader.py",  # 170 s
    "tests/system/test_release.py",  # 148 s
    "tests/system/test_handin_corpus.py",  # 141 s
    "tests/system/test_cluster.py",  # 140 s
    "tests/system/test_cluster_stalls.py",  # 131 s
    "tests/integration/test_interrupt.py",  # 122 s
    "tests/system/test_cluster_security.py",  # 105 s
    "tests/system/test_documented_commands.py",  # 341 s, one document at a time: 82, 80, 58, 31 s...
    "tests/system/test_gradescope_root.py",  # 79 s with its Debian root cached (setup.sh), 235 s without
    "tests/integration/test_isolation.py",  # 75 s
    "tests/integration/test_deadline_day_replay.py",  # 73 s
    "tests/integration/test_batch.py",  # 70 s
    "tests/system/test_jupyterlab.py",
    "tests/integration/test_check_warm_server.py",  # 66 s
    "tests/system/test_gradescope.py",  # 65 s
    "tests/integration/test_check_agrees.py",  # 64 s
]
#: modules whose tests are each a unit of their own
ONE_BY_ONE = {"tests/system/test_documented_commands.py"}
#: modules run one after the other by one worker: group -> modules
SAME_WORKER = {"local-users": ["tests/integration/test_owned_folders.py", "tests/system/test_cluster_security.py",
                              "tests/system/test_lti_ledger_files.py", "tests/system/test_normal_user.py",
                              "tests/system/test_normal_user_journeys.py"]}


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its module, its own id (``ONE_BY_ONE``), or its group (``SAME_WORKER``)."""
    module = _module(nodeid)
    if module in ONE_BY_ONE:
        return nodeid
    return next((group for group, modules in SAME_WORKER.items() if module in modules), module)


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415 - only where xdist runs the tests

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return ByUnit(config, log)


@pytest.hookimpl(trylast=True)  # after deselection: only the order of what runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, the longest units first; the scheduler hands units out in the order the workers collected
    them (with ``--no-loadscope-reorder``)."""
    if not hasattr(config, "workerinput"):
        return
    rank = {module: i for i, module in enumerate(LONGEST)}
    items.sort(key=lambda item: rank.get(_module(item.nodeid), len(rank)))  # stable: the rest keep their order
