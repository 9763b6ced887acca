"""``grade lti serve``: the tool's OIDC login, launch and JWKS endpoints, a WSGI application served by waitress.

An instructor launches the kit once from each LMS course: the launch is validated (state, signature against the
platform's JWKS, nonce used once, registration, audience, deployment, expiry, message) and what the course's
passback needs is stored: the AGS line-items URL and scopes, the NRPS memberships URL. Nothing else is kept.

Why waitress and not the standard library's ThreadingHTTPServer: that one gives each connection a thread that waits
for its request with no timeout, accepts with no bound and reads whatever Content-Length says; with 1,021 idle
connections (the usual 1,024 descriptors) the LMS's JWKS fetch got no answer and accept() failed in a busy loop.
waitress holds idle connections in one poll() loop, reads each request whole before a thread sees it, and times out,
bounds and caps as connection_bounds.py sets (tests/system/test_lti_hostile_network.py).
"""
from __future__ import annotations

import html
import json
import re
import socket
import sys
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl

import waitress
from pylti1p3.exception import LtiException, OIDCException, ToolConfException
from waitress import wasyncore

from . import connection_bounds, keys
from .store import Course, Store, now
from .tool import Launch, Login, HttpRequest, Sessions, tool_config

AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
CONTEXT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/context"
DEPLOYMENT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
STAFF_ROLES = ("Instructor", "Administrator", "ContentDeveloper", "TeachingAssistant")


def course_name(context: dict) -> str:
    """A short name for ``--lms-course``: the context's label (course code), else its title, else its id."""
    raw = context.get("label") or context.get("title") or context.get("id") or "course"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", raw).strip("-") or "course"


def record_launch(store: Store, claims: dict) -> Course | None:
    """Store what a staff member's launch tells about the course; None for a learner's launch."""
    roles = claims.get(ROLES_CLAIM, [])
    if not any(r.rsplit("#", 1)[-1].rsplit("/", 1)[-1] in STAFF_ROLES for r in roles):
        return None
    context = claims.get(CONTEXT_CLAIM) or {}
    ags = claims.get(AGS_CLAIM) or {}
    nrps = claims.get(NRPS_CLAIM) or {}
    course = Course(name=course_name(context), issuer=claims["iss"],
                    client_id=claims["aud"][0] if isinstance(claims["aud"], list) else claims["aud"],
                    deployment_id=claims[DEPLOYMENT_CLAIM], context_id=context.get("id", ""),
                    context_title=context.get("title", ""), lineitems_url=ags.get("lineitems"),
                    lineitem_url=ags.get("lineitem"), ags_scopes=tuple(ags.get("scope", [])),
                    memberships_url=nrps.get("context_memberships_url"), launched_by=claims.get("sub"),
                    launched_at=now())
    return store.save_course(course)


@dataclass
class Answer:
    status: int
    body: str
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)


def page(status: int, title: str, text: str) -> Answer:
    return Answer(status, f"<!doctype html><title>{html.escape(title)}</title><h1>{html.escape(title)}</h1>"
                          f"<p>{html.escape(text)}</p>")


class ToolApp:
    """The endpoints, as a WSGI application: GET and POST on the login URL, POST on the launch URL, GET on the JWKS
    URL. Its log says one line per refused login or launch and per course stored, never a query string (they carry
    tokens)."""

    def __init__(self, store: Store, base_url: str, log):
        self.store = store
        self.sessions = Sessions()
        self.base_url = base_url
        self.log = log

    @property
    def endpoints(self) -> dict[str, str]:
        return keys.endpoints(self.base_url)

    def __call__(self, environ: dict, start_response):
        answer = self.answer(environ)
        data = answer.body.encode("utf-8")
        start_response(f"{answer.status} {HTTPStatus(answer.status).phrase}",
                       [("Content-Type", answer.content_type), ("Content-Length", str(len(data))),
                        ("Cache-Control", "no-store"), *answer.headers])
        return [data]

    def answer(self, environ: dict) -> Answer:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        if method == "GET" and path == keys.JWKS_PATH:
            if not self.store.private_key_path.exists():
                return page(404, "No key yet", "run grade lti keys first")
            return Answer(200, json.dumps(keys.jwks(self.store.private_key_path)), "application/json")
        if method in ("GET", "POST") and path == keys.LOGIN_PATH:
            return self._login(environ)
        if method == "POST" and path == keys.LAUNCH_PATH:
            return self._launch(environ)
        if method not in ("GET", "POST"):
            return page(501, "Unsupported method", method)
        return page(404, "Not found", path)

    # -- plumbing -------------------------------------------------------------------------------------------------
    def _request(self, environ: dict) -> tuple[HttpRequest, str]:
        params = dict(parse_qsl(environ.get("QUERY_STRING", "")))
        if environ["REQUEST_METHOD"] == "POST":   # waitress has read it whole, under connection_bounds.MAX_BODY
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            params.update(parse_qsl(body.decode("utf-8")))
        cookies = {k: m.value for k, m in SimpleCookie(environ.get("HTTP_COOKIE", "")).items()}
        sid, data = self.sessions.get(cookies.get(Sessions.COOKIE))
        return HttpRequest(params, cookies, data, self.base_url.startswith("https://")), sid

    def _session_cookie(self, sid: str) -> tuple[str, str]:
        extra = "; Secure; SameSite=None; Partitioned" if self.base_url.startswith("https://") else "; SameSite=Lax"
        return "Set-Cookie", f"{Sessions.COOKIE}={sid}; Path=/; HttpOnly; Max-Age={Sessions.LIFETIME}{extra}"

    # -- endpoints ------------------------------------------------------------------------------------------------
    def _login(self, environ: dict) -> Answer:
        request, sid = self._request(environ)
        try:
            login = Login(request, tool_config(self.store))
            redirect = login.redirect(self.endpoints["launch_url"])
        except (OIDCException, LtiException, ToolConfException) as exc:
            iss = request.get_param("iss") or "?"
            self.log(f"refused login from {iss}: {exc} (is the platform registered? grade lti register)")
            return page(400, "Login refused", f"{exc}: this platform ({iss}) is not registered with the tool")
        headers = [("Location", redirect.location), self._session_cookie(sid)]
        headers += [("Set-Cookie", c) for c in redirect.cookies.headers()]
        return Answer(302, "", headers=headers)

    def _launch(self, environ: dict) -> Answer:
        request, _sid = self._request(environ)
        try:
            launch = Launch(request, tool_config(self.store))
            claims = launch.get_launch_data()  # validates: state, format, nonce, registration, signature, ...
        except ToolConfException as exc:
            self.log(f"refused launch: {exc}")
            return page(403, "Launch refused", f"the platform or client id is not registered with the tool "
                                               f"({exc}): grade lti register")
        except (LtiException, OIDCException, KeyError, AssertionError) as exc:
            self.log(f"refused launch: {exc}")
            return page(403, "Launch refused", str(exc))
        course = record_launch(self.store, claims)
        if course is None:
            return page(200, "Attention autograder", "Your grades reach this course's gradebook from the "
                                                     "autograder; there is nothing to do here.")
        services = [s for s, ok in (("grades (AGS)", course.lineitems_url), ("roster (NRPS)", course.memberships_url))
                    if ok]
        self.log(f"launch from {course.issuer}: course {course.name} ({course.context_title}) stored, with "
                 f"{' and '.join(services) or 'no service'}")
        missing = [s for s, ok in (("Assignment and Grade Services", course.lineitems_url),
                                   ("Names and Role Provisioning", course.memberships_url)) if not ok]
        text = (f"Course {course.context_title!r} is ready: grade lti push RESULTS --lms-course {course.name}"
                if not missing
                else f"Course stored as {course.name}, but the launch gave no {' and no '.join(missing)}: enable them "
                     "in the tool's configuration in the LMS and launch again")
        return page(200, "Attention autograder", text)


class ToolServer:
    """The application on waitress, listening on ``host:port`` (IPv4, as before), within connection_bounds.py's bounds:
    idle connections closed after ``idle_timeout`` seconds, at most ``max_connections`` at once (by default what the
    open-files limit leaves room for), request bodies under ``connection_bounds.MAX_BODY``."""

    def __init__(self, store: Store, host: str, port: int, base_url: str | None = None, log=None,
                 idle_timeout: int = connection_bounds.IDLE_TIMEOUT, max_connections: int | None = None):
        self.max_connections = max_connections or connection_bounds.max_connections(connection_bounds.open_files())
        self.idle_timeout = idle_timeout
        listening = socket.create_server((host, port), family=socket.AF_INET, backlog=1024)
        self.server_address = listening.getsockname()
        self.base_url = (base_url or f"http://{host}:{self.server_address[1]}").rstrip("/")
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.app = ToolApp(store, self.base_url, self.log)
        self._server = waitress.create_server(self.app, sockets=[listening],
                                              **connection_bounds.waitress_settings(self.max_connections, idle_timeout))
        self._stopped = threading.Event()

    @property
    def store(self) -> Store:
        return self.app.store

    @property
    def endpoints(self) -> dict[str, str]:
        return self.app.endpoints

    def serve_forever(self) -> None:
        """Serve until Ctrl-C or ``shutdown()``."""
        try:
            self._server.run()
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """From another thread: the serving loop closes every socket it holds (waitress's ``_map``) and returns."""
        self._server.trigger.pull_trigger(lambda: wasyncore.close_all(self._server._map))
        self._stopped.wait(30)
        self._server.task_dispatcher.shutdown()

    def server_close(self) -> None:
        """Once the loop has returned: close what it still holds (after Ctrl-C, the sockets it was serving)."""
        wasyncore.close_all(self._server._map)


def serve(store: Store, host: str, port: int, base_url: str | None, idle_timeout: int | None = None) -> None:
    files, hard = connection_bounds.raise_open_files()
    idle_timeout = idle_timeout or connection_bounds.IDLE_TIMEOUT
    server = ToolServer(store, host, port, base_url, idle_timeout=idle_timeout)
    server.log(f"serving the LTI tool on http://{host}:{server.server_address[1]} "
               f"(public address {server.base_url}); Ctrl-C stops")
    for name, url in server.endpoints.items():
        server.log(f"  {name}: {url}")
    server.log(f"  bounds: idle connections closed after {idle_timeout} s, at most {server.max_connections} "
               f"connections at once, request bodies under {connection_bounds.MAX_BODY / 2**20:g} MiB")
    if server.max_connections < connection_bounds.MAX_CONNECTIONS:
        server.log(f"  only {server.max_connections} connections fit in this process's {files} open files (hard "
                   f"limit {hard}); raise it (ulimit -Hn, systemd's LimitNOFILE=) to allow "
                   f"{connection_bounds.MAX_CONNECTIONS}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
