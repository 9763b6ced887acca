"""grade lti serve on a hostile network: the real command, started with the usual soft limit of 1,024 open files,
answers a launch from the independent platform while 2,000 idle connections are open and stays quiet meanwhile;
refuses a body over its cap from the Content-Length alone; closes an idle or half-sent connection after its timeout
while a busy one stays open (autograder/lti/connection_bounds.py)."""
from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from autograder.commands import lti as verb
from autograder.lti.store import Store

from .conftest import ROOT
from tests.support.lti_fixture import Lms, class_members

pytest.importorskip("pylti1p3", reason="pip install -e '.[lti]'")
pytest.importorskip("lti1p3platform", reason="pip install -e '.[test]'")
pytest.importorskip("waitress", reason="pip install -e '.[lti]'")
resource = pytest.importorskip("resource", reason="open-files limits are POSIX's")

from tests.support.lti_platform import LtiPlatform  # noqa: E402 - needs the test extra, skipped above without it

IDLE = 2000                 # idle connections held open during the launch
LAUNCH_BOUND = 60.0         # seconds for the whole launch (four requests); about 0.2 s when the machine is idle
SERVER_SOFT_LIMIT = 1024    # the server starts with the usual soft open-files limit and must raise it itself
MAX_BODY = 1024 * 1024      # autograder/lti/connection_bounds.py's cap, said again here so a change to it is a decision


@dataclass
class Serving:
    """``grade lti serve`` running in its own process; ``base_url`` is what Lms needs of a server."""
    process: subprocess.Popen
    base_url: str
    port: int
    log: Path

    def sockets(self) -> int:
        """The sockets the server process holds open (accepted connections and its listening socket)."""
        count = 0
        for fd in os.listdir(f"/proc/{self.process.pid}/fd"):
            try:
                count += os.readlink(f"/proc/{self.process.pid}/fd/{fd}").startswith("socket:")
            except FileNotFoundError:   # closed meanwhile
                pass
        return count

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime + stime

    def open_files_limit(self) -> int:
        line = next(x for x in Path(f"/proc/{self.process.pid}/limits").read_text().splitlines()
                    if x.startswith("Max open files"))
        return int(line.split()[3])


def waited(what: str, check, bound: float, every: float = 0.2):
    """Poll ``check`` until it returns something true, for at most ``bound`` seconds; fail saying ``what``."""
    deadline = time.monotonic() + bound
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {bound:.0f} s")
        time.sleep(every)


def start_serving(store_dir: Path, log: Path, idle_timeout: int, hard_limit: int | None) -> Serving:
    def usual_soft_limit():  # pragma: no cover - runs in the child, before exec
        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (SERVER_SOFT_LIMIT, hard_limit or hard))

    argv = [sys.executable, "-m", "autograder.cli", "lti", "serve", "--store", str(store_dir), "--host", "127.0.0.1",
            "--port", "0", "--idle-timeout", str(idle_timeout)]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   preexec_fn=usual_soft_limit)

    def listening():
        if process.poll() is not None:
            pytest.fail(f"grade lti serve exited {process.returncode}: {log.read_text()}")
        found = re.search(r"serving the LTI tool on http://127\.0\.0\.1:(\d+)", log.read_text())
        return found and int(found.group(1))

    port = waited("grade lti serve says where it listens", listening, 120)
    return Serving(process, f"http://127.0.0.1:{port}", port, log)


def stop_serving(serving: Serving) -> None:
    serving.process.terminate()
    try:
        serving.process.wait(30)
    except subprocess.TimeoutExpired:
        serving.process.kill()
        serving.process.wait(30)


@pytest.fixture
def serve_lms(tmp_path):
    """``serve_lms(idle_timeout, hard_limit)``: the independent platform and the real ``grade lti serve``, registered
    with each other; by default connections time out after 300 s, longer than any test here (none is closed for
    being idle), and the server may raise its open-files limit as far as this process's hard limit."""
    running: list[tuple[LtiPlatform, Serving]] = []

    def start(idle_timeout: int = 300, hard_limit: int | None = None) -> Lms:
        platform = LtiPlatform()
        platform.members = class_members(["alice"])
        store_dir = tmp_path / "lti-store"
        assert verb.keys(store_dir) == 0
        urls = platform.urls()
        assert verb.register(store_dir, platform.issuer, platform.client_id, urls["login_url"], urls["token_url"],
                             urls["jwks_url"], (platform.deployment_id,)) == 0
        serving = start_serving(store_dir, tmp_path / "serve.log", idle_timeout, hard_limit)
        running.append((platform, serving))
        base = serving.base_url
        platform.register_tool(base + "/lti/login", base + "/lti/launch", base + "/lti/jwks")
        platform.start()
        return Lms(platform, serving, store_dir, tmp_path)

    yield start
    for platform, serving in running:
        platform.stop()
        stop_serving(serving)


@pytest.fixture
def open_files():
    """Room in this process for the idle connections it opens: its soft limit raised for the test, then restored."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = IDLE + 200
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"this process may open at most {hard} files (hard limit), and the test holds {IDLE} connections")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, needed), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (end of stream or a reset); without waiting."""
    sock.setblocking(False)
    try:
        return sock.recv(4096) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        sock.settimeout(30)


def test_a_launch_is_answered_while_2000_idle_connections_are_open(serve_lms, open_files):
    lms = serve_lms()
    serving = lms.server
    before = serving.sockets()
    idle: list[socket.socket] = []
    try:
        opened = time.monotonic()
        for _ in range(IDLE):
            idle.append(connect(serving.port))
        # the server has accepted every one: they are open at the server, not waiting in the kernel's queue
        waited(f"the server holds {IDLE} idle connections (it holds {serving.sockets() - before})",
               lambda: serving.sockets() - before >= IDLE, 120)
        accepted = time.monotonic() - opened
        # quiet meanwhile: no busy accept loop (the old server spun once accept() failed for want of descriptors)
        cpu, window = serving.cpu_seconds(), time.monotonic()
        time.sleep(3)
        busy = (serving.cpu_seconds() - cpu) / (time.monotonic() - window)
        assert busy < 0.3, f"the server used {busy:.0%} of a core while only idle connections were open"

        started = time.monotonic()
        try:
            answer = lms.launch("u-teacher")     # the platform -> tool login -> platform -> tool launch
            jwks = requests.get(serving.base_url + "/lti/jwks", timeout=30)   # what the LMS fetches for each push
        except requests.RequestException as exc:
            pytest.fail(f"no answer with {IDLE} idle connections open: {exc!r}")
        took = time.monotonic() - started
        print(f"\n{IDLE} idle connections accepted in {accepted:.1f} s; the launch and a JWKS fetch answered in "
              f"{took:.2f} s; the server's open-files limit {serving.open_files_limit()}, {busy:.1%} of a core idle")
        assert answer.status_code == 200 and "is ready" in answer.text, answer.text
        assert jwks.status_code == 200 and jwks.json()["keys"]
        assert took < LAUNCH_BOUND
        assert [c.name for c in Store(lms.store_dir).courses()] == ["ATT101"]
        # the idle connections were open throughout: the server still holds them, and none was closed
        assert serving.sockets() - before >= IDLE
        assert not [s for s in idle if closed_by_server(s)]
        assert serving.open_files_limit() > SERVER_SOFT_LIMIT       # raised by the server at start-up
    finally:
        for sock in idle:
            sock.close()


def form_post(length: int, body: bytes = b"") -> bytes:
    return (b"POST /lti/launch HTTP/1.1\r\nHost: tool\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: %d\r\n\r\n" % length) + body


def answer_of(sock: socket.socket) -> tuple[int, bytes]:
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, response.read()


def test_an_oversized_body_is_refused_unread(serve_lms):
    port = serve_lms().server.port
    with connect(port) as sock:
        sock.sendall(form_post(MAX_BODY))            # a Content-Length at the cap, and not one byte of the body
        status, body = answer_of(sock)               # answered all the same: the server did not wait for the body
        assert status == 413, body
        assert waited("the server closes the connection it refused", lambda: closed_by_server(sock), 30)
    # the control: a body one byte under the cap is read whole and reaches the launch endpoint, which refuses it
    # for its own reason (no launch began in this browser)
    form = b"state=nothing&id_token=x&padding="
    with connect(port) as sock:
        sock.sendall(form_post(MAX_BODY - 1, form + b"a" * (MAX_BODY - 1 - len(form))))
        status, body = answer_of(sock)
        assert status == 403 and b"Launch refused" in body and b"State not found" in body, body


def test_an_idle_connection_is_closed_after_its_timeout(serve_lms):
    port = serve_lms(idle_timeout=2).server.port
    opened = time.monotonic()
    idle = connect(port)                                         # says nothing
    half = connect(port)
    half.sendall(b"GET /lti/jwks HTTP/1.1\r\nHost: tool\r\n")    # begins a request and never ends it
    # the control: a connection used every quarter second stays open, the same connection throughout
    busy = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    busy.connect()
    first = busy.sock
    closed: dict[str, float] = {}
    try:
        while len(closed) < 2 and time.monotonic() - opened < 60:
            busy.request("GET", "/lti/jwks")
            response = busy.getresponse()
            assert response.status == 200 and response.read()
            assert busy.sock is first, "the busy connection was closed"
            for name, sock in (("idle", idle), ("half", half)):
                if name not in closed and closed_by_server(sock):
                    closed[name] = time.monotonic() - opened
            time.sleep(0.25)
        assert set(closed) == {"idle", "half"}, f"closed within 60 s of a 2 s idle timeout: {closed}"
        assert min(closed.values()) >= 1.8, f"closed before the timeout: {closed}"
        print(f"\nclosed after {closed} s (idle timeout 2 s); the busy connection stayed open")
    finally:
        busy.close()
        idle.close()
        half.close()


def test_past_its_bound_new_connections_wait_until_idle_ones_time_out(serve_lms, open_files):
    # a hard limit of 1,024 open files leaves room for (1024 - 64) // 2 connections at once; the server says so
    lms = serve_lms(idle_timeout=5, hard_limit=1024)
    serving, bound = lms.server, 480
    assert f"only {bound} connections fit" in serving.log.read_text()
    before = serving.sockets()
    idle = []
    try:
        for _ in range(bound + 120):
            idle.append(connect(serving.port))
        waited(f"the server holds {bound} idle connections", lambda: serving.sockets() - before >= bound, 60)
        cpu, window = serving.cpu_seconds(), time.monotonic()
        time.sleep(2)                                  # within the first idle timeout: the bound is still reached
        busy = (serving.cpu_seconds() - cpu) / (time.monotonic() - window)
        assert serving.sockets() - before <= bound, "more connections accepted than the bound"
        assert busy < 0.3, f"the server used {busy:.0%} of a core at its bound (a busy accept loop)"
        # a request past the bound is not refused: it is answered once idle connections have timed out
        started = time.monotonic()
        jwks = requests.get(serving.base_url + "/lti/jwks", timeout=LAUNCH_BOUND)
        took = time.monotonic() - started
        print(f"\nat the bound of {bound}: {busy:.1%} of a core; a JWKS fetch behind {len(idle)} idle connections "
              f"answered in {took:.1f} s (idle timeout 5 s)")
        assert jwks.status_code == 200 and jwks.json()["keys"]
    finally:
        for sock in idle:
            sock.close()
