"""The CPU each test step spends, its own and its finished child processes', printed as "slowest 20 by CPU" beside
pytest's ``--durations`` (wall time). On 2 shared cores the CPU is what sets the suite's time: a step that waits
costs wall time only, one that starts ``grade`` or a kernel costs both. Measured on the process that runs the step
(an xdist worker) and carried to the controller in the report's ``user_properties``. With ``CPU_TIME_FILE`` set,
every step is written there too (CPU-s, phase, test id, xdist worker, start and end as Unix times; tab-separated),
to compare two runs whole and to see when each worker was busy."""
from __future__ import annotations

import os

import pytest

from tests.support import warm_grade

SHOWN = 20
_started: dict[str, float] = {}
_spent: list[tuple[float, str, str]] = []
_every: list[tuple[float, str, str, str, float, float]] = []


def _cpu() -> float:
    """This process's CPU, its waited-for children's, and its ``grade`` commands' (forked by the warm server)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system + warm_grade.SPENT_IN_CHILDREN[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    began = _started.pop(f"{item.nodeid}:{call.when}", None)
    if began is not None:
        report.user_properties.append(("cpu_seconds", _cpu() - began))
        report.user_properties.append(("worker", os.environ.get("PYTEST_XDIST_WORKER", "-")))


def _phase(item, when):
    _started[f"{item.nodeid}:{when}"] = _cpu()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _phase(item, "setup")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    _phase(item, "call")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    _phase(item, "teardown")


def pytest_runtest_logreport(report):
    said = dict(report.user_properties)
    if "cpu_seconds" not in said:
        return
    if said["cpu_seconds"] >= 0.5:
        _spent.append((said["cpu_seconds"], report.when, report.nodeid))
    _every.append((said["cpu_seconds"], report.when, report.nodeid, said.get("worker", "-"), report.start,
                   report.stop))


def pytest_terminal_summary(terminalreporter, config):
    if config.getoption("durations", None) is None:  # the stage that prints durations (make test's slow stage)
        return
    if os.environ.get("CPU_TIME_FILE") and _every:
        with open(os.environ["CPU_TIME_FILE"], "w") as file:
            file.writelines(f"{s:.2f}\t{when}\t{nodeid}\t{worker}\t{start:.2f}\t{stop:.2f}\n"
                            for s, when, nodeid, worker, start, stop in sorted(_every, reverse=True))
    if not _spent:
        return
    total = sum(s for s, _, _ in _spent)
    terminalreporter.write_sep("=", f"slowest {SHOWN} by CPU (steps over 0.5 s: {total:,.0f} CPU-s in all)")
    for seconds, when, nodeid in sorted(_spent, reverse=True)[:SHOWN]:
        terminalreporter.write_line(f"{seconds:7.2f}s {when:<8} {nodeid}")
    by_file: dict[str, float] = {}
    for seconds, _, nodeid in _spent:
        by_file[nodeid.split("::")[0]] = by_file.get(nodeid.split("::")[0], 0.0) + seconds
    terminalreporter.write_sep("-", f"the {SHOWN} files that spend the most CPU")
    for path, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:SHOWN]:
        terminalreporter.write_line(f"{seconds:7.1f}s {path}")
