"""Assignment and Grade Services (LTI AGS 2.0) and Names and Role Provisioning (NRPS 2.0), through pylti1p3next.

- Every request goes through ``Platform.call``: a 5xx, a 429 or a dropped connection is retried with exponential
  backoff (``Retry-After`` honoured, capped); a 4xx is never retried and becomes a ``Refused`` with the platform's
  words. A 401 on a service is retried once with a fresh access token (the cached one may have expired).
- The line item is found by ``resourceId`` or created exactly once: a creation whose answer is lost (5xx, timeout)
  is never sent again blindly; the line items are searched again first (PrairieLearn #15643: duplicate columns).
- A score is the AGS score object (``userId``, ``scoreGiven``, ``scoreMaximum``, ``comment``, ``timestamp`` with
  sub-second precision, ``activityProgress: Completed``, ``gradingProgress: FullyGraded``, ``submission.submittedAt``)
  plus Canvas's extension (``https://canvas.instructure.com/lti/submission``: ``submitted_at``, ``new_submission``).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

import requests
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.names_roles import NamesRolesProvisioningService

from .tool import MemoryServiceConnector

T = TypeVar("T")
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
LINEITEM_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
RESULT_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"
LEARNER = "Learner"


class Refused(Exception):
    """The platform said no (a 4xx), or kept failing (5xx/429 after every retry): the words say which."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass
class Retry:
    attempts: int = 5          # tries in all, for a 5xx, a 429 or a dropped connection
    base: float = 0.5          # seconds before the first retry; doubled each time
    cap: float = 30.0          # at most this long between tries, Retry-After included
    sleep: Callable[[float], None] = time.sleep


def _status(exc: Exception) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _words(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if response is None:
        return str(exc)
    text = " ".join((response.text or "").split())[:200]
    return f"HTTP {response.status_code} from {response.url}" + (f": {text}" if text else "")


class Platform:
    """One course's services on its platform: a service connector (tokens in memory) and the retry policy."""

    def __init__(self, registration, session: requests.Session, retry: Retry | None = None):
        self.connector = MemoryServiceConnector(registration, session)
        self.token_url = registration.get_auth_token_url()
        self.retry = retry or Retry()
        self.retries = 0          # how many retries this push needed, for its summary

    def call(self, what: str, fn: Callable[[], T], retry_5xx: bool = True) -> T:
        fresh_token = False
        for attempt in range(1, self.retry.attempts + 1):
            try:
                return fn()
            except LtiServiceException as exc:
                status = _status(exc)
                response = exc.response
                if response is not None and self.token_url and response.url.startswith(self.token_url):
                    if status is not None and (status >= 500 or status == 429) and attempt < self.retry.attempts:
                        self._wait(attempt, response)
                        continue
                    raise Refused(f"the platform refused the tool's access token request ({_words(exc)}): check the "
                                  "client id, and that the LMS has the tool's JWKS URL or public key "
                                  "(grade lti keys)", status) from None
                if status == 401 and not fresh_token:
                    fresh_token = True
                    self.connector.forget_tokens()
                    continue
                if status is not None and 400 <= status < 500 and status != 429:
                    raise Refused(f"{what}: refused, {_words(exc)}", status) from None
                if not retry_5xx or attempt == self.retry.attempts:
                    raise Refused(f"{what}: failed after {attempt} tries, {_words(exc)}", status) from None
                self._wait(attempt, response)
            except requests.RequestException as exc:
                if not retry_5xx or attempt == self.retry.attempts:
                    raise Refused(f"{what}: the platform did not answer after {attempt} tries ({exc})") from None
                self._wait(attempt, None)
            except LtiException as exc:
                raise Refused(f"{what}: {exc}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait(self, attempt: int, response) -> None:
        self.retries += 1
        delay = self.retry.base * 2 ** (attempt - 1)
        after = response.headers.get("Retry-After") if response is not None else None
        if after and after.strip().isdigit():
            delay = max(delay, float(after))
        self.retry.sleep(min(delay, self.retry.cap))

    # -- NRPS ---------------------------------------------------------------------------------------------------
    def members(self, memberships_url: str) -> list[dict]:
        nrps = NamesRolesProvisioningService(self.connector, {"context_memberships_url": memberships_url})
        members, url = [], memberships_url
        while url:
            page, url = self.call("reading the course's members (NRPS)", lambda u=url: nrps.get_members_page(u))
            members.extend(page)
        return members

    # -- AGS ----------------------------------------------------------------------------------------------------
    def ags(self, lineitems_url: str, scopes: tuple[str, ...]) -> AssignmentsGradesService:
        return AssignmentsGradesService(self.connector, {"scope": list(scopes), "lineitems": lineitems_url})

    def find_lineitem(self, ags: AssignmentsGradesService, resource_id: str) -> dict | None:
        found = self.call("reading the line items (AGS)", lambda: [
            item for item in ags.get_lineitems() if item.get("resourceId") == resource_id])
        if len(found) > 1:
            ids = ", ".join(item.get("id", "?") for item in found)
            raise Refused(f"{len(found)} line items have resourceId {resource_id!r} ({ids}): delete the extra "
                          "gradebook columns in the LMS, then push again")
        return found[0] if found else None

    def find_or_create_lineitem(self, ags: AssignmentsGradesService, resource_id: str, label: str,
                                score_maximum: float) -> tuple[dict, bool]:
        """The line item with this ``resourceId``: found, else created once. (item, created)."""
        item = self.find_lineitem(ags, resource_id)
        if item is not None:
            return item, False
        new = LineItem({"resourceId": resource_id, "label": label, "scoreMaximum": score_maximum,
                        "tag": "attention-autograder"})
        for attempt in range(1, self.retry.attempts + 1):
            try:
                created = self.call("creating the line item (AGS)", lambda: ags.create_lineitem(new), retry_5xx=False)
                return _lineitem_dict(created), True
            except Refused as exc:
                if exc.status is not None and exc.status < 500 and exc.status != 429:
                    raise
                if attempt == self.retry.attempts:
                    raise
                # the answer was lost: the platform may have created it all the same; look before creating again
                self._wait(attempt, None)
                item = self.find_lineitem(ags, resource_id)
                if item is not None:
                    return item, True
        raise AssertionError("unreachable")  # pragma: no cover

    def post_score(self, ags: AssignmentsGradesService, lineitem: dict, payload: dict) -> None:
        grade = _grade(payload)
        self.call(f"posting {payload['userId']}'s score (AGS)", lambda: ags.put_grade(grade, LineItem(lineitem)))

    def results(self, ags: AssignmentsGradesService, lineitem: dict) -> dict[str, dict]:
        """The platform's results on this line item, by user id (the Result service, read-only)."""
        items = self.call("reading the results (AGS)", lambda: list(ags.get_grades(LineItem(lineitem))))
        return {str(r.get("userId")): r for r in items if isinstance(r, dict)}


def _lineitem_dict(item: LineItem) -> dict:
    return json.loads(item.get_value()) | ({"id": item.get_id()} if item.get_id() else {})


def _grade(payload: dict) -> Grade:
    grade = (Grade().set_score_given(payload["scoreGiven"]).set_score_maximum(payload["scoreMaximum"])
             .set_activity_progress(payload["activityProgress"]).set_grading_progress(payload["gradingProgress"])
             .set_timestamp(payload["timestamp"]).set_user_id(payload["userId"]).set_comment(payload["comment"]))
    if "submission" in payload:
        grade.set_submitted_at(payload["submission"]["submittedAt"])
    extra = {k: v for k, v in payload.items() if k.startswith("https://")}
    if extra:
        grade.set_extra_claims(extra)
    return grade


def score_payload(user_id: str, given: float, maximum: float, comment: str, submitted_at: str | None,
                  timestamp: str, new_submission: bool) -> dict:
    """The score object POSTed to the line item's /scores (AGS 2.0 section 3.4, with Canvas's extension)."""
    payload = {"userId": user_id, "scoreGiven": round(given, 6), "scoreMaximum": maximum, "comment": comment,
               "timestamp": timestamp, "activityProgress": "Completed", "gradingProgress": "FullyGraded"}
    canvas = {"new_submission": new_submission}
    if submitted_at:
        payload["submission"] = {"submittedAt": submitted_at}
        canvas["submitted_at"] = submitted_at
    payload[CANVAS_SUBMISSION] = canvas
    return payload


def is_learner(member: dict) -> bool:
    roles = member.get("roles") or []
    active = (member.get("status") or "Active") == "Active"
    return active and any(r.rsplit("#", 1)[-1].rsplit("/", 1)[-1] == LEARNER for r in roles)
