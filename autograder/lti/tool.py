"""The glue between the store and pylti1p3next: its tool configuration, a request, session and cookie of the standard
library's HTTP server, the OIDC login and message launch, and a service connector whose tokens stay in memory.

Why pylti1p3next: it is the maintained fork of pylti1p3 (the tool library most Python LTI tools use; pylti1p3's last
release was 2022): same API, current dependencies, paginated line items and members. It validates the launch's
state, signature (against the platform's JWKS), nonce, registration and deployment; this module adds what it leaves
to the framework: the audience (``aud``/``azp`` checked here: the library decodes with ``verify_aud`` off), a nonce
used once only, and required ``exp``/``iat``.
"""
from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field

import requests
from pylti1p3.cookie import CookieService
from pylti1p3.exception import LtiInvalidNonceException, LtiMessageValidationException
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.request import Request
from pylti1p3.service_connector import ServiceConnector
from pylti1p3.session import SessionService
from pylti1p3.tool_config import ToolConfDict

from . import keys
from .store import Store

USER_AGENT = "attention-autograder-lti"
TIMEOUT = 30  # seconds, for every request to the platform


def tool_config(store: Store) -> ToolConfDict:
    """pylti1p3's configuration of every platform registered in the store, with the tool's key pair."""
    issuers: dict[str, list[dict]] = {}
    for p in store.platforms():
        issuers.setdefault(p.issuer, []).append({
            "default": False, "client_id": p.client_id, "auth_login_url": p.auth_login_url,
            "auth_token_url": p.auth_token_url, "auth_audience": p.auth_audience, "key_set_url": p.key_set_url,
            "key_set": None, "deployment_ids": store.deployments(p.issuer, p.client_id)})
    for configs in issuers.values():
        configs[0]["default"] = True
    conf = ToolConfDict(issuers)
    if store.private_key_path.exists():
        private, public = keys.private_pem(store.private_key_path), keys.public_pem(store.private_key_path)
        for p in store.platforms():
            conf.set_private_key(p.issuer, private, client_id=p.client_id)
            conf.set_public_key(p.issuer, public, client_id=p.client_id)
    return conf


def registration(store: Store, issuer: str, client_id: str):
    return tool_config(store).find_registration_by_params(issuer, client_id)


class MemoryServiceConnector(ServiceConnector):
    """Access tokens cached in this process's memory only (never on disk), until a minute before they expire."""

    def __init__(self, registration, requests_session: requests.Session | None = None):
        super().__init__(registration, requests_session)
        self._tokens: dict[str, tuple[str, float]] = {}

    def _get_cached_access_token(self, scope_key: str) -> str | None:
        token, expires = self._tokens.get(scope_key, (None, 0.0))
        return token if token and expires > time.monotonic() else None

    def _cache_access_token(self, scope_key: str, access_token: str, expires_in: float) -> None:
        self._tokens[scope_key] = (access_token, time.monotonic() + max(0.0, float(expires_in or 0) - 60))

    def forget_tokens(self) -> None:
        self._tokens.clear()


def http_session() -> requests.Session:
    session = requests.Session()
    session.headers["User-Agent"] = USER_AGENT
    session.request = _with_timeout(session.request)  # type: ignore[method-assign]
    return session


def _with_timeout(request):
    def call(method, url, **kwargs):
        kwargs.setdefault("timeout", TIMEOUT)
        return request(method, url, **kwargs)
    return call


# -- a request of the standard library's HTTP server, for pylti1p3 --------------------------------------------
class Sessions:
    """Server-side sessions of ``grade lti serve``, keyed by a random cookie, in memory, expiring after an hour."""
    COOKIE = "grade-lti-session"
    LIFETIME = 3600

    def __init__(self):
        self._lock = threading.Lock()
        self._data: dict[str, tuple[float, dict]] = {}

    def get(self, sid: str | None) -> tuple[str, dict]:
        with self._lock:
            now = time.monotonic()
            for key in [k for k, (born, _) in self._data.items() if now - born > self.LIFETIME]:
                del self._data[key]
            if sid and sid in self._data:
                return sid, self._data[sid][1]
            sid = secrets.token_urlsafe(32)
            self._data[sid] = (now, {})
            return sid, self._data[sid][1]


@dataclass
class HttpRequest(Request):
    params: dict[str, str]
    cookies: dict[str, str]
    session_data: dict
    secure: bool = False

    @property
    def session(self):
        return self.session_data

    def is_secure(self) -> bool:
        return self.secure

    def get_param(self, key: str) -> str:
        return self.params.get(key)  # type: ignore[return-value]

    def get_cookie(self, key: str) -> str | None:
        return self.cookies.get(key)


class OnceSessionService(SessionService):
    """pylti1p3's session service, but a nonce is good for one launch only (a replayed id_token is refused): it is
    spent once the launch is valid (so a forged token cannot spend the genuine launch's nonce)."""

    def spend_nonce(self, nonce: str) -> bool:
        return self.data_storage._request.session.pop(self._get_key("nonce", nonce), None) is not None


@dataclass
class Cookies(CookieService):
    request: HttpRequest
    to_set: dict[str, tuple[str, int]] = field(default_factory=dict)

    def get_cookie(self, name: str) -> str | None:
        return self.request.get_cookie(f"{self._cookie_prefix}-{name}")

    def set_cookie(self, name: str, value, exp: int | None = 3600) -> None:
        self.to_set[f"{self._cookie_prefix}-{name}"] = (str(value), int(exp or 3600))

    def headers(self) -> list[str]:
        extra = "; Secure; SameSite=None; Partitioned" if self.request.is_secure() else "; SameSite=Lax"
        return [f"{k}={v}; Max-Age={exp}; Path=/; HttpOnly{extra}" for k, (v, exp) in self.to_set.items()]


@dataclass
class Redirected(Redirect):
    location: str
    cookies: Cookies

    def do_redirect(self):
        return self

    def do_js_redirect(self):
        return self

    def set_redirect_url(self, location: str) -> None:
        self.location = location

    def get_redirect_url(self) -> str:
        return self.location


class Login(OIDCLogin):
    def __init__(self, request: HttpRequest, config: ToolConfDict):
        cookies = Cookies(request)
        super().__init__(request, config, session_service=OnceSessionService(request), cookie_service=cookies)
        self.cookies = cookies

    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)

    def get_redirect(self, url: str) -> Redirected:
        return Redirected(url, self.cookies)

    def get_response(self, html: str):  # pragma: no cover (the cookie check page is disabled)
        return html


class Launch(MessageLaunch):
    def __init__(self, request: HttpRequest, config: ToolConfDict, session: requests.Session | None = None):
        super().__init__(request, config, session_service=OnceSessionService(request), cookie_service=Cookies(request),
                         requests_session=session or http_session(), service_connector_cls=MemoryServiceConnector)
        self.set_jwt_verify_options({"verify_aud": False, "require": ["exp", "iat"]})

    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)

    def save_launch_data(self) -> "Launch":
        if not self._session_service.spend_nonce(self._get_jwt_body().get("nonce")):
            raise LtiInvalidNonceException("Invalid Nonce (already used).")
        return super().save_launch_data()

    def validate_registration(self) -> "Launch":
        super().validate_registration()
        body = self._get_jwt_body()
        client_id = self._registration.get_client_id()
        aud = body.get("aud")
        audiences = aud if isinstance(aud, list) else [aud]
        if client_id not in audiences:
            raise LtiMessageValidationException(f"the id_token's audience {aud!r} is not this tool's client id")
        if len(audiences) > 1 and body.get("azp") != client_id:
            raise LtiMessageValidationException("several audiences and no azp naming this tool's client id")
        return self
