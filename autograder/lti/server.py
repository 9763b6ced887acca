"""``grade lti serve``: the tool's OIDC login, launch and JWKS endpoints, on the standard library's HTTP server.

An instructor launches the kit once from each LMS course: the launch is validated (state, signature against the
platform's JWKS, nonce used once, registration, audience, deployment, expiry, message) and what the course's
passback needs is stored: the AGS line-items URL and scopes, the NRPS memberships URL. Nothing else is kept.
"""
from __future__ import annotations

import html
import json
import re
import sys
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from pylti1p3.exception import LtiException, OIDCException, ToolConfException

from . import keys
from .store import Course, Store, now
from .tool import Launch, Login, HttpRequest, Sessions, tool_config

AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
CONTEXT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/context"
DEPLOYMENT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
STAFF_ROLES = ("Instructor", "Administrator", "ContentDeveloper", "TeachingAssistant")


def course_name(context: dict) -> str:
    """A short name for ``--course``: the context's label (course code), else its title, else its id."""
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


class ToolServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, store: Store, host: str, port: int, base_url: str | None = None, log=None):
        super().__init__((host, port), Handler)
        self.store = store
        self.sessions = Sessions()
        self.base_url = (base_url or f"http://{host}:{self.server_address[1]}").rstrip("/")
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))

    @property
    def endpoints(self) -> dict[str, str]:
        return keys.endpoints(self.base_url)


class Handler(BaseHTTPRequestHandler):
    server: ToolServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass  # one line per launch is said by the server, never the query strings (they carry tokens)

    # -- plumbing -------------------------------------------------------------------------------------------------
    def _params(self) -> dict[str, str]:
        params = dict(parse_qsl(urlsplit(self.path).query))
        if self.command == "POST":
            length = int(self.headers.get("Content-Length") or 0)
            params.update(parse_qsl(self.rfile.read(length).decode("utf-8")))
        return params

    def _request(self) -> tuple[HttpRequest, str]:
        cookie = SimpleCookie(self.headers.get("Cookie", ""))
        cookies = {k: m.value for k, m in cookie.items()}
        sid, data = self.server.sessions.get(cookies.get(Sessions.COOKIE))
        secure = self.server.base_url.startswith("https://")
        return HttpRequest(self._params(), cookies, data, secure), sid

    def _send(self, status: int, body: str, content_type="text/html; charset=utf-8", headers=()) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _page(self, status: int, title: str, text: str) -> None:
        self._send(status, f"<!doctype html><title>{html.escape(title)}</title><h1>{html.escape(title)}</h1>"
                           f"<p>{html.escape(text)}</p>")

    def _session_cookie(self, sid: str) -> tuple[str, str]:
        extra = "; Secure; SameSite=None; Partitioned" if self.server.base_url.startswith("https://") else \
            "; SameSite=Lax"
        return "Set-Cookie", f"{Sessions.COOKIE}={sid}; Path=/; HttpOnly; Max-Age={Sessions.LIFETIME}{extra}"

    # -- endpoints ------------------------------------------------------------------------------------------------
    def do_GET(self):
        path = urlsplit(self.path).path
        if path == keys.JWKS_PATH:
            if not self.server.store.private_key_path.exists():
                return self._page(404, "No key yet", "run grade lti keys first")
            return self._send(200, json.dumps(keys.jwks(self.server.store.private_key_path)), "application/json")
        if path == keys.LOGIN_PATH:
            return self._login()
        return self._page(404, "Not found", path)

    def do_POST(self):
        path = urlsplit(self.path).path
        if path == keys.LOGIN_PATH:
            return self._login()
        if path == keys.LAUNCH_PATH:
            return self._launch()
        return self._page(404, "Not found", path)

    def _login(self) -> None:
        request, sid = self._request()
        try:
            login = Login(request, tool_config(self.server.store))
            redirect = login.redirect(self.server.endpoints["launch_url"])
        except (OIDCException, LtiException, ToolConfException) as exc:
            iss = request.get_param("iss") or "?"
            self.server.log(f"refused login from {iss}: {exc} (is the platform registered? grade lti register)")
            return self._page(400, "Login refused", f"{exc}: this platform ({iss}) is not registered with the tool")
        headers = [("Location", redirect.location), self._session_cookie(sid)]
        headers += [("Set-Cookie", c) for c in redirect.cookies.headers()]
        self._send(302, "", headers=headers)

    def _launch(self) -> None:
        request, sid = self._request()
        try:
            launch = Launch(request, tool_config(self.server.store))
            claims = launch.get_launch_data()  # validates: state, format, nonce, registration, signature, ...
        except ToolConfException as exc:
            self.server.log(f"refused launch: {exc}")
            return self._page(403, "Launch refused", f"the platform or client id is not registered with the tool "
                                                     f"({exc}): grade lti register")
        except (LtiException, OIDCException, KeyError, AssertionError) as exc:
            self.server.log(f"refused launch: {exc}")
            return self._page(403, "Launch refused", str(exc))
        course = record_launch(self.server.store, claims)
        if course is None:
            return self._page(200, "Attention autograder", "Your grades reach this course's gradebook from the "
                                                           "autograder; there is nothing to do here.")
        services = [s for s, ok in (("grades (AGS)", course.lineitems_url), ("roster (NRPS)", course.memberships_url))
                    if ok]
        self.server.log(f"launch from {course.issuer}: course {course.name} ({course.context_title}) stored, with "
                        f"{' and '.join(services) or 'no service'}")
        missing = [s for s, ok in (("Assignment and Grade Services", course.lineitems_url),
                                   ("Names and Role Provisioning", course.memberships_url)) if not ok]
        text = (f"Course {course.context_title!r} is ready: grade lti push RESULTS --course {course.name}" if not missing
                else f"Course stored as {course.name}, but the launch gave no {' and no '.join(missing)}: enable them "
                     "in the tool's configuration in the LMS and launch again")
        self._page(200, "Attention autograder", text)


def serve(store: Store, host: str, port: int, base_url: str | None) -> None:
    server = ToolServer(store, host, port, base_url)
    server.log(f"serving the LTI tool on http://{host}:{server.server_address[1]} "
               f"(public address {server.base_url}); Ctrl-C stops")
    for name, url in server.endpoints.items():
        server.log(f"  {name}: {url}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
