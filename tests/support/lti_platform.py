"""An independent LTI 1.3 platform for the tests: lti1p3platform (an LTI platform library, not the kit's code) with a
small in-memory course and gradebook, served on loopback by the standard library's HTTP server.

What it does as an LMS would: initiates a launch (302 to the tool's login URL), answers the OIDC authorization
request with an auto-submitting form that posts a signed id_token to the tool, issues access tokens for the tool's
signed client assertion (checked against the tool's JWKS URL), and serves NRPS memberships and AGS line items,
scores and results. It keeps every request the tool made to the services (method, path, content type, body) so the
tests can check the payloads against the AGS and Canvas score specifications, which the library does not validate.

``fail(path_part, status, times, method=...)`` makes the next ``times`` matching requests answer ``status``
(a 5xx, a 429 or a 4xx); ``lose_answer_of = n`` applies the n-th score post and drops its connection before the
answer: the worst moment for a push to be interrupted.
"""
from __future__ import annotations

import json
import threading
import time
import typing as t
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.exceptions import LineItemNotFoundException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
CONTEXT = Context(id="ctx-att-101", label="ATT101", title="Attention mechanisms, spring term")


def rsa_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@dataclass
class Member:
    user_id: str
    name: str
    email: str
    roles: list[str]
    sourcedid: str = ""

    def nrps(self) -> dict:
        out = {"user_id": self.user_id, "name": self.name, "email": self.email, "roles": self.roles,
               "status": "Active"}
        if self.sourcedid:
            out["lis_person_sourcedid"] = self.sourcedid
        return out


@dataclass
class Gradebook:
    lineitems: dict[str, dict] = field(default_factory=dict)          # id -> line item
    results: dict[tuple[str, str], dict] = field(default_factory=dict)  # (line item id, user id) -> last score
    requests: list[dict] = field(default_factory=list)                 # every service request the tool made
    lock: threading.Lock = field(default_factory=threading.Lock)

    def scores(self) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith("/scores") and r["method"] == "POST"]

    def column(self, lineitem_id: str) -> dict[str, float]:
        return {user: r["scoreGiven"] for (item, user), r in sorted(self.results.items()) if item == lineitem_id}


class _Req(Request):
    def build_metadata(self, request):
        return request


class Conf(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs):
        self.registration_obj: Registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs):
        return self.registration_obj


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs):
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url):
        return url


class Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data, **kwargs):
        inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in launch_data.items()
                         if k != "launch_url")
        return (f'<!doctype html><form id="launch" method="post" action="{launch_data["launch_url"]}">{inputs}'
                '</form><script>document.getElementById("launch").submit()</script>')


class Ags(AssignmentsGradesService):
    book: Gradebook
    base: str

    def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None, resource_id=None,
                       tag=None, **_):
        items = [i for i in self.book.lineitems.values()
                 if (resource_id is None or i.get("resourceId") == resource_id)
                 and (tag is None or i.get("tag") == tag)]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id):
        if line_item_id not in self.book.lineitems:
            raise LineItemNotFoundException()
        return self.book.lineitems[line_item_id]

    def create_lineitem(self, creation_data):
        item_id = f"{self.base}/lineitems/{uuid.uuid4().hex[:8]}"
        item = dict(creation_data, id=item_id)
        self.book.lineitems[item_id] = item
        return item

    def update_lineitem(self, update_data):
        self.book.lineitems[update_data["id"]].update(update_data)
        return self.book.lineitems[update_data["id"]]

    def delete_lineitem(self, line_item_id):
        self.book.lineitems.pop(line_item_id)

    def update_score(self, line_item_id, score):
        if line_item_id not in self.book.lineitems:
            raise LineItemNotFoundException()
        key = (line_item_id, str(score["userId"]))
        old = self.book.results.get(key)
        if old and old["timestamp"] > score["timestamp"]:   # AGS: an older score never replaces a newer one
            return UpdateScoreStatus.OLD_TIMESTAMP
        self.book.results[key] = score
        return UpdateScoreStatus.SUCCESS if old else UpdateScoreStatus.CREATED

    def get_results(self, line_item_id, page=1, limit=None, user_id=None, **_):
        if line_item_id not in self.book.lineitems:
            raise LineItemNotFoundException()
        out = []
        for (item, user), score in self.book.results.items():
            if item == line_item_id and (user_id is None or user == user_id):
                out.append({"id": f"{line_item_id}/results/{user}", "scoreOf": line_item_id, "userId": user,
                            "resultScore": score["scoreGiven"], "resultMaximum": score["scoreMaximum"],
                            "comment": score.get("comment")})
        return {"content": out, "has_next": False, "next": None}


class Nrps(NamesRoleProvisioningService):
    members: list[Member]

    def get_member_data_page(self, page=1, limit=None, role=None, since=None, **_):
        return {"content": [m.nrps() for m in self.members], "has_next": False, "next": None}

    def get_context_by_id(self):
        return CONTEXT


class LtiPlatform:
    """The platform; ``start()`` serves it on 127.0.0.1, ``stop()`` ends it."""

    def __init__(self, client_id: str = "attention-tool", deployment_id: str = "deployment-1"):
        self.client_id, self.deployment_id = client_id, deployment_id
        self.private_key, self.public_key = rsa_pair()
        self.book = Gradebook()
        self.members: list[Member] = []
        self.faults: list[dict] = []
        self.lose_answer_of: int | None = None   # the n-th score post: applied, its answer lost
        self.lose_create_answer: int | None = None  # a line item creation: applied, then answered with this status
        self.tokens: list[str] = []               # every access token issued, to look for them where none may be
        self.id_token_expiration = 300
        self.granted_scopes: list[str] | None = None
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.registration: Registration | None = None
        self._thread: threading.Thread | None = None

    # -- what an LMS administrator fills in ---------------------------------------------------------------------
    @property
    def issuer(self) -> str:
        return self.base

    def urls(self) -> dict[str, str]:
        return {"login_url": self.base + "/auth", "token_url": self.base + "/token", "jwks_url": self.base + "/jwks"}

    def register_tool(self, login_url: str, launch_url: str, jwks_url: str) -> None:
        self.registration = (Registration().set_iss(self.issuer).set_client_id(self.client_id)
                             .set_deployment_id(self.deployment_id).set_oidc_login_url(login_url)
                             .set_launch_url(launch_url).set_tool_key_set_url(jwks_url)
                             .set_platform_public_key(self.public_key).set_platform_private_key(self.private_key))

    def conf(self) -> Conf:
        conf = Conf(registration=self.registration)
        conf.get_registration()
        return conf

    def launch_url(self, user_id: str) -> str:
        """Where the browser goes when the user clicks the tool's link in the course."""
        return f"{self.base}/course/launch?{urlencode({'user': user_id})}"

    # -- faults -------------------------------------------------------------------------------------------------
    def fail(self, path_part: str, status: int, times: int = 1, method: str | None = None,
             retry_after: str | None = None) -> None:
        self.faults.append({"path": path_part, "status": status, "times": times, "method": method,
                            "retry_after": retry_after})

    def start(self) -> "LtiPlatform":
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(platform: LtiPlatform):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, code: int, body: t.Any = b"", content_type="application/json", headers=()):
            data = body if isinstance(body, bytes) else (body.encode() if isinstance(body, str)
                                                         else json.dumps(body).encode())
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _fault(self) -> bool:
            for fault in platform.faults:
                if fault["times"] > 0 and fault["path"] in self.path and fault["method"] in (None, self.command):
                    fault["times"] -= 1
                    headers = [("Retry-After", fault["retry_after"])] if fault["retry_after"] else []
                    self._send(fault["status"], {"error": f"injected {fault['status']}"}, headers=headers)
                    return True
            return False

        def _request(self, body: bytes) -> _Req:
            split = urlsplit(self.path)
            form = dict(parse_qsl(body.decode())) if self.headers.get("Content-Type", "").startswith(
                "application/x-www-form-urlencoded") else {}
            try:
                js = json.loads(body) if body and "json" in self.headers.get("Content-Type", "") else None
            except ValueError:
                js = None
            return _Req({"method": self.command, "form_data": form, "get_data": dict(parse_qsl(split.query)),
                         "headers": dict(self.headers), "content_type": self.headers.get("Content-Type"),
                         "path": split.path, "json": js})

        def do_GET(self):
            self._dispatch(b"")

        def do_POST(self):
            self._dispatch(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        def do_PUT(self):
            self._dispatch(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        def _dispatch(self, body: bytes):
            path = urlsplit(self.path).path
            request = self._request(body)
            if path in ("/context/members",) or path.startswith("/lineitems"):
                with platform.book.lock:
                    platform.book.requests.append({"method": self.command, "path": path,
                                                   "query": request.get_data,
                                                   "content_type": self.headers.get("Content-Type"),
                                                   "accept": self.headers.get("Accept"),
                                                   "body": request.json, "at": time.time()})
            if self._fault():
                return
            conf = platform.conf()
            if path == "/jwks":
                return self._send(200, conf.get_jwks())
            if path == "/course/launch":
                login = Login(request, conf)
                login.set_lti_message_hint(hint=f"resource-link-1:{request.get_data['user']}")
                return self._send(302, "", headers=[("Location", login.initiate_login(request.get_data["user"]))])
            if path == "/auth":
                return self._auth(request, conf)
            if path == "/token":
                try:
                    token = conf.get_access_token(request.form_data)
                except Exception as exc:  # noqa: BLE001 - any refusal is a 400 with its words
                    return self._send(400, {"error": "invalid_client", "error_description": str(exc)})
                platform.tokens.append(token["access_token"])
                return self._send(200, token)
            if path == "/context/members":
                service = Nrps(request, conf, platform.base + "/context/members")
                service.members = platform.members
                return self._answer(service.handle_resp(service.handle_get_members))
            if path.startswith("/lineitems"):
                return self._ags(request, conf, path)
            return self._send(404, {"error": "not found"})

        def _auth(self, request, conf):
            params = request.get_data
            user = params["login_hint"]
            member = next((m for m in platform.members if m.user_id == user), None)
            if member is None or params.get("redirect_uri") != platform.registration.get_launch_url():
                return self._send(400, "unknown user or redirect_uri", "text/plain")
            launch = Launch(request, conf)
            launch.set_id_token_expiration(platform.id_token_expiration)
            launch.set_user_data(member.user_id, member.roles, member.name, member.email)
            launch.set_launch_context_claim(CONTEXT.id, context_title=CONTEXT.title, context_label=CONTEXT.label)
            launch.set_resource_link_claim("resource-link-1", title="Attention exercises")
            launch.set_ags(platform.base + "/lineitems", allow_creating_lineitems=True)
            if platform.granted_scopes is not None:
                launch.extra_claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"]["scope"] = \
                    platform.granted_scopes
            launch.set_nrps(platform.base + "/context/members")
            return self._send(200, launch.lti_launch(), "text/html")

        def _ags(self, request, conf, path):
            parts = path.strip("/").split("/")
            service = Ags(request, conf, platform.base + "/lineitems")
            service.book, service.base = platform.book, platform.base
            if len(parts) == 1:
                if self.command == "GET":
                    return self._answer(service.handle_resp(service.handle_get_lineitems))
                response = service.handle_resp(service.handle_create_lineitem)
                if platform.lose_create_answer and response.code < 300:
                    status, platform.lose_create_answer = platform.lose_create_answer, None
                    return self._send(status, {"error": "created, but the answer was lost"})
                return self._answer(response)
            item_id = f"{platform.base}/lineitems/{parts[1]}"
            if len(parts) == 3 and parts[2] == "scores":
                with platform.book.lock:
                    response = service.handle_resp(service.handle_update_score, line_item_id=item_id)
                    lost = platform.lose_answer_of == len(platform.book.scores())
                if lost:  # the score is applied, the answer never reaches the tool
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return None
                return self._answer(response)
            if len(parts) == 3 and parts[2] == "results":
                return self._answer(service.handle_resp(service.handle_get_results, line_item_id=item_id))
            if self.command == "PUT":
                return self._answer(service.handle_resp(service.handle_update_lineitem, line_item_id=item_id))
            return self._answer(service.handle_resp(service.handle_get_lineitem, line_item_id=item_id))

        def _answer(self, response):
            result = response.result
            if isinstance(result, dict) and "content" in result:
                result = result["content"]
            if response.code >= 400:
                return self._send(response.code, {"error": response.message})
            if result is None:
                return self._send(response.code, b"", response.media_type)
            return self._send(response.code, result, response.media_type)

    return Handler
