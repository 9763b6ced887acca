"""Another local user's attempts on a Dask cluster's ports: run code there, or read its web pages.

``attempt(who, ports)`` runs, as ``who`` (tests/support/local_users.py: the system's Python 3.11 with this environment's
packages), a script that tries every port at once, each in five ways:

- ``client``: a ``distributed.Client`` on ``tcp://`` and ``client.run(os.geteuid)`` (what docs/cluster.md's old
  set-up allowed anyone);
- ``client-own-tls``: the same on ``tls://``, with a certificate of the user's own (``Security.temporary()``);
- ``run``, ``run-own-tls``: a nanny's or worker's ``run`` handler called directly (``rpc``), on ``tcp://`` and on
  ``tls://`` with that certificate;
- ``http``: a GET of Dask's JSON and info pages on the port;

and, given ``course`` (the course's certificate files, readable by ``who``), ``client-course``: a Client on
``tls://`` with them. It answers, per port and way, ``{"ok": what came back}`` or ``{"refused": why}``.
"""
from __future__ import annotations

import json

from .local_users import User, python_for, run_as, site_packages

SCRIPT = r'''
import asyncio, json, os, sys, urllib.request

from distributed import Client
from distributed.core import rpc
from distributed.protocol.pickle import dumps
from distributed.security import Security

ports, course = json.loads(sys.argv[1]), json.loads(sys.argv[2])
TIMEOUT = 4
own = Security.temporary()
plain = Security()


async def client(address, security):
    async with Client(address, security=security, asynchronous=True, timeout=TIMEOUT) as c:
        return await asyncio.wait_for(c.run(os.geteuid), 8)


async def run(address, security):
    r = rpc(address, connection_args=security.get_connection_args("client"), timeout=TIMEOUT)
    try:
        answer = await asyncio.wait_for(r.run(function=dumps(os.geteuid)), 8)
    finally:
        await r.close_rpc()
    if not isinstance(answer, dict) or answer.get("status") != "OK":
        raise RuntimeError(repr(answer)[:300])
    return answer["result"]


def http(port):
    got = {}
    for page in ("json/identity.json", "info/main/workers.html"):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{page}", timeout=TIMEOUT) as answer:
                got[page] = answer.read(200).decode(errors="replace")
        except Exception as exc:
            continue
    if not got:
        raise OSError("no page")
    return got


async def one(way, coroutine):
    try:
        return way, {"ok": await asyncio.wait_for(coroutine, 12)}
    except BaseException as exc:  # a handshake refused, a port that is not a scheduler's, no answer within 12 s
        return way, {"refused": f"{type(exc).__name__}: {exc}"[:400]}


async def main():
    jobs = []
    for port in ports:
        jobs.append((port, one("client", client(f"tcp://127.0.0.1:{port}", plain))))
        jobs.append((port, one("client-own-tls", client(f"tls://127.0.0.1:{port}", own))))
        jobs.append((port, one("run", run(f"tcp://127.0.0.1:{port}", plain))))
        jobs.append((port, one("run-own-tls", run(f"tls://127.0.0.1:{port}", own))))
        jobs.append((port, one("http", asyncio.to_thread(http, port))))
        if course:
            theirs = Security(tls_ca_file=course["ca"], tls_client_cert=course["cert"], tls_client_key=course["key"],
                              require_encryption=True)
            jobs.append((port, one("client-course", client(f"tls://127.0.0.1:{port}", theirs))))
    found = await asyncio.gather(*(job for _, job in jobs))
    out = {}
    for (port, _), (way, what) in zip(jobs, found):
        out.setdefault(str(port), {})[way] = what
    print("@@@" + json.dumps(out, default=repr))


asyncio.run(main())
'''


def attempt(who: User, ports: list[int], course: dict | None = None, timeout: float = 300) -> dict:
    """{port: {way: {"ok": ...} or {"refused": why}}}, as ``who`` found it."""
    done = run_as(who, [python_for(who), "-c", SCRIPT, json.dumps(sorted(ports)), json.dumps(course)],
                  env={"PYTHONPATH": site_packages()}, cwd=who.home, timeout=timeout)
    line = next((x for x in done.stdout.splitlines() if x.startswith("@@@")), None)
    assert line, f"the attempt did not finish (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return json.loads(line[3:])


def successes(found: dict) -> dict:
    """Only the ways that got something: {port: {way: what}}."""
    return {port: {way: what["ok"] for way, what in ways.items() if "ok" in what}
            for port, ways in found.items() if any("ok" in what for what in ways.values())}


def listening_ports(pids) -> list[int]:
    """The TCP ports the processes ``pids`` listen on (read as root: /proc/<pid>/fd and /proc/net/tcp{,6})."""
    import os  # noqa: PLC0415 - only here

    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]  # noqa: SIM115 - read whole
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)
