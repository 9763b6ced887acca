"""The kit's tool (``grade lti serve``'s server, in a thread) and an independent platform
(tests/support/lti_platform.py), both on loopback, registered with each other as an LMS administrator and an instructor
would; a browser's launch."""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import requests

from autograder.commands import lti as verb
from autograder.lti.store import Store

from .lti_platform import INSTRUCTOR, LEARNER, LtiPlatform, Member

COURSE_YML = """\
unit: attention
title: Attention unit
late_policy:
  due: 2025-03-14T23:59:00+01:00
  grace_minutes: 15
  penalty_per_day: 10
  max_penalty: 50
steps:
  simple_attention.attention_scores:
    title: Attention scores
    counts: {values: 4, gradients: 6}
"""


def results_json(score: float, submitted_at: str | None) -> str:
    data = {"score": score, "output": "", "visibility": "visible", "stdout_visibility": "hidden",
            "tests": [{"name": "simple_attention.attention_scores values: Attention scores", "score": 0,
                       "max_score": 4.0, "status": "failed"},
                      {"name": "simple_attention.attention_scores gradients: Attention scores", "score": 0,
                       "max_score": 6.0, "status": "failed"}]}
    if submitted_at:
        data["extra_data"] = {"submission": "x", "submitted_at": submitted_at}
    return json.dumps(data)


def write_results(folder: Path, scores: dict[str, tuple[float, str | None]]) -> Path:
    for name, (score, when) in scores.items():
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "results.json").write_text(results_json(score, when))
    return folder


class _Form(HTMLParser):
    def __init__(self):
        super().__init__()
        self.action, self.fields = None, {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.action = a.get("action")
        elif tag == "input" and a.get("name"):
            self.fields[a["name"]] = a.get("value", "")


def parse_form(html: str) -> tuple[str, dict[str, str]]:
    form = _Form()
    form.feed(html)
    assert form.action, html[:500]
    return form.action, form.fields


@dataclass
class Lms:
    platform: LtiPlatform
    server: object
    store_dir: Path
    tmp: Path

    @property
    def tool_url(self) -> str:
        return self.server.base_url

    def browser_form(self, user: str) -> tuple[requests.Session, str, dict[str, str]]:
        """A browser clicks the tool's link: redirects followed (platform -> tool login -> platform auth), up to the
        auto-submitting form the platform answers with (what a browser's script would post)."""
        browser = requests.Session()
        page = browser.get(self.platform.launch_url(user), timeout=30)
        assert page.status_code == 200, page.text
        assert [r.status_code for r in page.history] == [302, 302]
        assert page.history[1].url.startswith(self.tool_url + "/lti/login")
        action, fields = parse_form(page.text)
        return browser, action, fields

    def launch(self, user: str) -> requests.Response:
        browser, action, fields = self.browser_form(user)
        return browser.post(action, data=fields, timeout=30)


def start(tmp: Path, members: list[Member]) -> Lms:
    from autograder.lti.server import ToolServer  # noqa: PLC0415 - optional: the lti extra

    store_dir = tmp / "lti-store"
    store = Store(store_dir)
    server = ToolServer(store, "127.0.0.1", 0, log=lambda line: None)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    platform = LtiPlatform()
    platform.members = members
    e = server.endpoints
    # the LMS administrator pastes the tool's URLs (grade lti keys prints them) into the LMS ...
    assert verb.keys(store_dir, url=server.base_url) == 0
    platform.register_tool(e["login_url"], e["launch_url"], e["jwks_url"])
    platform.start()
    # ... and the instructor gives the tool what the LMS shows about itself
    urls = platform.urls()
    assert verb.register(store_dir, platform.issuer, platform.client_id, urls["login_url"], urls["token_url"],
                         urls["jwks_url"], (platform.deployment_id,)) == 0
    return Lms(platform, server, store_dir, tmp)


def stop(lms: Lms) -> None:
    lms.platform.stop()
    lms.server.shutdown()
    lms.server.server_close()


def class_members(names: list[str]) -> list[Member]:
    people = [Member("u-teacher", "Tess Teacher", "tess@uni.edu", [INSTRUCTOR])]
    for i, name in enumerate(names, start=1):
        people.append(Member(f"u-{i:03d}-{name}", name.title(), f"{name}@uni.edu", [LEARNER], sourcedid=f"S{i:03d}"))
    return people


ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
ISO_SUBSECOND = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(Z|[+-]\d\d:\d\d)$")
ACTIVITY = {"Initialized", "Started", "InProgress", "Submitted", "Completed"}
GRADING = {"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}
CANVAS = "https://canvas.instructure.com/lti/submission"
CANVAS_KEYS = {"new_submission", "submission_type", "submission_data", "submitted_at", "content_items",
               "prioritize_non_tool_grade"}


def score_problems(request: dict) -> list[str]:
    """What is wrong with a score POST under AGS 2.0 (section 3.4, the score publish service) and Canvas's
    extension of it; [] when nothing is."""
    problems = []
    if request["content_type"] != "application/vnd.ims.lis.v1.score+json":
        problems.append(f"content type {request['content_type']}")
    body = request["body"]
    if not isinstance(body, dict):
        return problems + ["body is not a JSON object"]
    allowed = {"userId", "scoreGiven", "scoreMaximum", "comment", "timestamp", "activityProgress",
               "gradingProgress", "submission", CANVAS}
    problems += [f"unknown field {k}" for k in body if k not in allowed]
    if not isinstance(body.get("userId"), str) or not body["userId"]:
        problems.append("userId must be the LTI user id, a non-empty string")
    if body.get("activityProgress") not in ACTIVITY:
        problems.append(f"activityProgress {body.get('activityProgress')!r}")
    if body.get("gradingProgress") not in GRADING:
        problems.append(f"gradingProgress {body.get('gradingProgress')!r}")
    if not ISO_SUBSECOND.match(str(body.get("timestamp"))):
        problems.append(f"timestamp {body.get('timestamp')!r} is not ISO 8601 with sub-second precision and offset")
    if "scoreGiven" in body:
        given, maximum = body["scoreGiven"], body.get("scoreMaximum")
        if not isinstance(given, (int, float)) or given < 0:
            problems.append(f"scoreGiven {given!r} must be a number >= 0")
        if not isinstance(maximum, (int, float)) or maximum <= 0:
            problems.append(f"scoreMaximum {maximum!r} must be a number > 0 when scoreGiven is given")
        elif isinstance(given, (int, float)) and given > maximum:
            problems.append(f"scoreGiven {given} above scoreMaximum {maximum}")
    if body.get("gradingProgress") == "FullyGraded" and "scoreGiven" not in body:
        problems.append("FullyGraded without scoreGiven")
    if "comment" in body and (not isinstance(body["comment"], str) or "\n" in body["comment"]):
        problems.append("comment must be one line of text")
    if "submission" in body:
        sub = body["submission"]
        if not isinstance(sub, dict) or not ISO.match(str(sub.get("submittedAt"))):
            problems.append(f"submission {sub!r}: submittedAt must be ISO 8601")
    if CANVAS in body:
        ext = body[CANVAS]
        problems += [f"unknown Canvas submission field {k}" for k in ext if k not in CANVAS_KEYS]
        if "new_submission" in ext and not isinstance(ext["new_submission"], bool):
            problems.append("Canvas new_submission must be a boolean")
        if "submitted_at" in ext and not ISO.match(str(ext["submitted_at"])):
            problems.append("Canvas submitted_at must be ISO 8601")
    return problems
