"""grade lti serve refuses a launch it cannot trust: forged signature, expired, replayed, wrong audience, unknown
deployment, state from another browser; each beside the genuine launch it was made from, which is accepted."""
from __future__ import annotations

import time

import pytest
import requests

from autograder.lti.store import Store

from tests.support.lti_fixture import class_members, start, stop
from tests.support.lti_platform import rsa_pair

jwt = pytest.importorskip("jwt")
pytest.importorskip("pylti1p3", reason="pip install -e '.[lti]'")
pytest.importorskip("lti1p3platform", reason="pip install -e '.[test]'")


@pytest.fixture
def lms(tmp_path):
    lms = start(tmp_path, class_members(["alice"]))
    yield lms
    stop(lms)


def courses(lms):
    return [c.name for c in Store(lms.store_dir).courses()]


def resign(token: str, key: str, **changes) -> str:
    header = jwt.get_unverified_header(token)
    if changes.get("iat") == "an hour from now":
        changes = {**changes, "iat": int(time.time()) + 3600}
    claims = jwt.decode(token, options={"verify_signature": False}) | changes
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": header["kid"]})


def refused(response, words: str) -> None:
    assert response.status_code == 403, response.text
    assert "Launch refused" in response.text and words in response.text, response.text


def test_a_forged_signature_is_refused(lms):
    browser, action, fields = lms.browser_form("u-teacher")
    forged = dict(fields, id_token=resign(fields["id_token"], rsa_pair()[0]))   # another key, the platform's kid
    refused(browser.post(action, data=forged, timeout=30), "Signature verification failed")
    assert courses(lms) == []
    # the control: the genuine token of the same launch (its nonce not spent by the forgery) is accepted
    assert browser.post(action, data=fields, timeout=30).status_code == 200
    assert courses(lms) == ["ATT101"]


def test_an_expired_launch_is_refused(lms):
    lms.platform.id_token_expiration = -120          # the platform signs a token that expired two minutes ago
    refused(lms.launch("u-teacher"), "expired")
    assert courses(lms) == []
    lms.platform.id_token_expiration = 300
    assert lms.launch("u-teacher").status_code == 200 and courses(lms) == ["ATT101"]


def test_a_replayed_launch_is_refused(lms):
    browser, action, fields = lms.browser_form("u-teacher")
    assert browser.post(action, data=fields, timeout=30).status_code == 200
    refused(browser.post(action, data=fields, timeout=30), "Nonce")


@pytest.mark.parametrize("change, words", [
    ({"aud": "someone-else"}, "client id is not registered with the tool"),
    ({"aud": ["attention-tool", "someone-else"], "azp": "someone-else"}, "no azp naming this tool"),
    ({"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "deployment-9"}, "deployment-9"),
    ({"iat": "an hour from now"}, "not yet valid"),  # from when the test runs, not when it was collected
])
def test_a_launch_signed_by_the_platform_for_something_else_is_refused(lms, change, words):
    browser, action, fields = lms.browser_form("u-teacher")
    odd = dict(fields, id_token=resign(fields["id_token"], lms.platform.private_key, **change))
    refused(browser.post(action, data=odd, timeout=30), words)
    # the control: re-signed by the platform without the change, the same launch is accepted
    same = dict(fields, id_token=resign(fields["id_token"], lms.platform.private_key))
    assert browser.post(action, data=same, timeout=30).status_code == 200


def test_a_state_from_another_browser_is_refused(lms):
    _, action, fields = lms.browser_form("u-teacher")
    other, _, _ = lms.browser_form("u-teacher")      # another browser: its own cookies, not this launch's state
    refused(other.post(action, data=fields, timeout=30), "State not found")
    assert courses(lms) == []


def test_an_unregistered_platform_cannot_log_in(lms):
    response = requests.get(lms.tool_url + "/lti/login", params={"iss": "https://lms.example.org",
                                                                 "login_hint": "u1", "target_link_uri": "x"},
                            timeout=30)
    assert response.status_code == 400 and "not registered" in response.text
    # the control: the registered platform's login is redirected to its authorization endpoint
    ok = requests.get(lms.tool_url + "/lti/login", params={"iss": lms.platform.issuer, "login_hint": "u-teacher",
                                                           "client_id": "attention-tool"},
                      allow_redirects=False, timeout=30)
    assert ok.status_code == 302 and ok.headers["Location"].startswith(lms.platform.base + "/auth?")
