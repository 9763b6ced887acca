"""``grade lti push``: results.json files -> the LMS gradebook, through NRPS and AGS, once per change.

1. The course's learners come from NRPS and stand in for the roster of ``grade export``: a submission name is
   matched to one member by the key ``--match`` (or course.yml's ``lti.match``) names, the same way ``grade export``
   matches a roster (autograder/export/roster.py); a student with several submissions gets the newest only, and the
   late policy of course.yml is applied there, once (autograder/export/gradebook.py).
2. The line item is found by ``resourceId`` or created once (ags.py).
3. The ledger (store.py) says, per learner, the fingerprint of the score last posted: an unchanged score is not
   posted again. Each post is written to the ledger as *pending* before the request and *posted* after it, so an
   interrupted push resumes where it stopped: a pending score is first looked up in the platform's results (when
   the Result service is granted) and posted again only if it is not there, with the very same payload and
   timestamp (the platform then keeps one result).
"""
from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from autograder.usage import UsageError
from autograder.course import CourseError, load_course
from autograder.export import gradebook
from autograder.export.read_results import read_dir
from autograder.export.roster import Student

from . import ags as services
from .store import PENDING, POSTED, Course, Post, Store, now
from .tool import http_session, registration

MATCH_KEYS = ("email", "login", "sourcedid", "user_id")


@dataclass
class Plan:
    """One learner's score, decided before anything is sent."""
    user_id: str
    who: str                      # the submission name and the member's name, for the report
    submission: str
    payload: dict
    fingerprint: str
    action: str                   # "post", "resume" (pending, same score), "unchanged", "refused"
    reason: str = ""


@dataclass
class Summary:
    course: str
    lineitem: str
    lineitem_created: bool
    posted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    confirmed: list[str] = field(default_factory=list)      # pending from an interrupted push, found on the platform
    unmatched_results: list[str] = field(default_factory=list)
    unmatched_members: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    #: hand-ins the kit never graded and no person decided: nothing posted (``--ungraded zero`` posts their score)
    not_graded: list[str] = field(default_factory=list)
    excused: list[str] = field(default_factory=list)         # excused by a person (decision.json): nothing posted
    decided: list[str] = field(default_factory=list)         # a score a person recorded, posted in the kit's place
    notes: list[str] = field(default_factory=list)
    retries: int = 0
    dry_run: bool = False

    @property
    def unmatched(self) -> int:
        return len(self.unmatched_results) + len(self.unmatched_members)

    def line(self) -> str:
        verb = "would post" if self.dry_run else "posted"
        return (f"{verb} {len(self.posted)}, unchanged {len(self.unchanged) + len(self.confirmed)}, "
                f"unmatched {self.unmatched}, refused {len(self.refused)}")

    def lines(self) -> list[str]:
        out = [f"course {self.course}, line item {self.lineitem}" +
               (" (created)" if self.lineitem_created else ""), self.line()]
        if self.confirmed:
            out.append(f"  already on the platform (an interrupted push had sent them): {', '.join(self.confirmed)}")
        if self.unmatched_results:
            out.append(f"  results with no learner in the LMS course: {', '.join(self.unmatched_results)}")
        if self.unmatched_members:
            out.append(f"  learners in the LMS course with no results: {', '.join(self.unmatched_members)}")
        if self.not_graded:
            out.append(f"  not posted, never graded by the kit (record a decision with grade decide NAME, or post the "
                       f"kit's score with --ungraded zero): {', '.join(self.not_graded)}")
        if self.excused:
            out.append(f"  not posted, excused by a person (mark it excused in the LMS): {', '.join(self.excused)}")
        if self.decided:
            out.append(f"  a person's decision {'would be ' if self.dry_run else ''}posted in the kit's place: "
                       f"{', '.join(self.decided)}")
        out += [f"  refused: {r}" for r in self.refused]
        if self.retries:
            out.append(f"  {self.retries} request(s) retried after a 5xx, a 429 or a dropped connection")
        return out


def fingerprint(payload: dict, submission: str) -> str:
    core = {k: payload.get(k) for k in ("scoreGiven", "scoreMaximum", "comment", "submission", "activityProgress",
                                        "gradingProgress")}
    return hashlib.sha256(json.dumps([core, submission], sort_keys=True).encode()).hexdigest()


def comment_for(raw: float, final: float, maximum: float, lateness, decided: bool = False) -> str:
    text = f"attention autograder: {final:g}/{maximum:g} points" + (", recorded by your instructor" if decided else "")
    if lateness is not None and lateness.penalty > 0:
        text += f" ({raw:g} less {lateness.penalty * 100:g}% for {lateness.late_days:g} late day(s))"
    return text


def _member_student(index: int, member: dict, match: str):
    name = member.get("name") or " ".join(filter(None, (member.get("given_name"), member.get("family_name"))))
    if match == "email":
        return Student(index, name=name, email=member.get("email") or "")
    if match == "login":
        login = member.get("ext_user_username") or member.get("login_id") or member.get("preferred_username") or ""
        return Student(index, name=name, login=login)
    if match == "sourcedid":
        return Student(index, name=name, sis_id=member.get("lis_person_sourcedid") or "")
    return Student(index, name=name, id=str(member.get("user_id") or ""))


def _results_match(result: dict | None, payload: dict) -> bool:
    if not result or result.get("resultScore") is None:
        return False
    their_max = result.get("resultMaximum") or payload["scoreMaximum"]
    same = abs(result["resultScore"] / their_max - payload["scoreGiven"] / payload["scoreMaximum"]) < 1e-9
    return same and result.get("comment", payload["comment"]) == payload["comment"]


def push(store: Store, course_name: str, results_dir: Path, course_file: Path, match: str | None = None,
         resource_id: str | None = None, label: str | None = None, dry_run: bool = False,
         retry: services.Retry | None = None, progress: bool | None = None, say=print,
         ungraded: str = "blank") -> Summary:
    """``ungraded``: ``blank`` posts nothing for a hand-in the kit never graded that no person decided (export/
    ungraded.py), ``zero`` posts its score; a person's decision (decision.json) is posted in the kit's place, an
    excuse posts nothing. Each is named in the summary."""
    course = store.require_course(course_name)
    if not results_dir.is_dir():
        raise UsageError(f"{results_dir}: no such folder (give the --out folder of grade autograde)")
    try:
        unit = load_course(course_file)
    except CourseError as exc:
        raise UsageError(str(exc)) from None
    settings = getattr(unit, "lti", None)
    match = match or (settings.match if settings else None) or "email"
    if match not in MATCH_KEYS:
        raise UsageError(f"--match {match}: one of {', '.join(MATCH_KEYS)}")
    resource_id = resource_id or (settings.resource_id if settings and settings.resource_id else None) or unit.unit
    label = label or (settings.label if settings and settings.label else None) or unit.title
    _check_services(course)
    if not store.private_key_path.exists():
        raise UsageError(f"no tool key in {store.dir}: grade lti keys first")

    submissions, unreadable = read_dir(results_dir)
    if not submissions and not unreadable:
        raise UsageError(f"{results_dir}: no submission folder in it (expected {results_dir}/<name>/results.json)")
    maximum = unit.max_points()

    platform = services.Platform(registration(store, course.issuer, course.client_id), http_session(), retry)
    try:
        members = [m for m in platform.members(course.memberships_url) if services.is_learner(m)]
    except services.Refused as exc:
        raise UsageError(f"course {course.name}: {exc}") from None
    students, user_of = [], {}
    no_key = []
    for i, member in enumerate(members, start=1):
        student = _member_student(i, member, match)
        if not student.keys():
            no_key.append(student.name or str(member.get("user_id")))
            continue
        students.append(student)
        user_of[id(student)] = str(member["user_id"])
    if not students:
        raise UsageError(f"course {course.name}: no learner of the LMS course has a {match} to match results by "
                         f"({len(members)} learners; does the LMS share it with the tool? see docs/lti.md)")
    book = gradebook.build(students, submissions, unreadable, unit.late_policy, maximum, ungraded)

    ags = platform.ags(course.lineitems_url, course.ags_scopes)
    try:
        if dry_run:
            item, created = platform.find_lineitem(ags, resource_id), False
        else:
            item, created = platform.find_or_create_lineitem(ags, resource_id, label, maximum)
    except services.Refused as exc:
        raise UsageError(f"course {course.name}: {exc}") from None
    lineitem_url = item["id"] if item else "(to be created)"
    if item:
        store.save_lineitem(course.name, resource_id, lineitem_url)
    summary = Summary(course.name, f"{label!r} (resourceId {resource_id}, {lineitem_url})", created, dry_run=dry_run)
    if item and item.get("scoreMaximum") not in (None, maximum):
        summary.notes.append(f"the line item's scoreMaximum is {item['scoreMaximum']:g}, course.yml's points "
                             f"{maximum:g}: scores are posted out of {maximum:g}")
    if no_key:
        summary.notes.append(f"{len(no_key)} learner(s) have no {match} in the LMS's roster: {', '.join(no_key)}")

    summary.unmatched_results = [f"{s.name}" for s in book.unknown] + \
        [f"{name} (matches several learners)" for name, _ in book.ambiguous]
    summary.unmatched_members = [e.student.label for e in book.missing if e.unreadable is None]
    summary.refused += [f"{e.student.label}: results.json unreadable ({e.unreadable.reason}); nothing posted"
                        for e in book.missing if e.unreadable is not None]
    for student, names, kept in book.duplicates:
        summary.notes.append(f"{student.label} handed in {', '.join(names)}: the newest, {kept}, is posted")

    ledger = store.posts(course.name, lineitem_url) if item else {}
    for entry in book.handed_in:
        who = f"{entry.submission.name} ({entry.student.name or user_of[id(entry.student)]})"
        before = ledger.get(user_of[id(entry.student)])
        kept = " (a score posted before stays in the LMS)" if before is not None and before.state == POSTED else ""
        if entry.excused:
            summary.excused.append(who + kept)
        elif entry.withheld:
            summary.not_graded.append(f"{who}: {'; '.join(entry.submission.ungraded)}{kept}")
        elif entry.decision is not None:
            summary.decided.append(f"{who}: {entry.decision.words(maximum)}")
    plans = _plan(book, user_of, maximum, ledger)
    for plan in plans:
        if plan.action == "refused":
            summary.refused.append(f"{plan.who}: {plan.reason}")
        elif plan.action == "unchanged":
            summary.unchanged.append(plan.who)

    todo = [p for p in plans if p.action in ("post", "resume")]
    if dry_run:
        for plan in todo:
            p = plan.payload
            say(f"would post {plan.who}: {p['scoreGiven']:g}/{p['scoreMaximum']:g} to LMS user {plan.user_id} "
                f"({p['comment']})")
        summary.posted = [p.who for p in todo]
        return summary

    on_platform = {}
    if any(p.action == "resume" for p in todo) and services.RESULT_SCOPE in course.ags_scopes:
        on_platform = platform.results(ags, item)
    bar = _bar(len(todo), progress)
    try:
        for plan in todo:
            if plan.action == "resume" and _results_match(on_platform.get(plan.user_id), plan.payload):
                store.mark(course.name, lineitem_url, Post(plan.user_id, plan.submission, plan.fingerprint,
                                                          plan.payload, POSTED))
                summary.confirmed.append(plan.who)
                bar.update(1)
                continue
            store.mark(course.name, lineitem_url, Post(plan.user_id, plan.submission, plan.fingerprint,
                                                      plan.payload, PENDING))
            try:
                platform.post_score(ags, item, plan.payload)
            except services.Refused as exc:
                summary.refused.append(f"{plan.who}: {exc}")
            else:
                store.mark(course.name, lineitem_url, Post(plan.user_id, plan.submission, plan.fingerprint,
                                                          plan.payload, POSTED))
                summary.posted.append(plan.who)
            bar.update(1)
    except KeyboardInterrupt:
        bar.close()
        summary.retries = platform.retries
        raise Interrupted(summary, len(summary.posted) + len(summary.confirmed), len(todo)) from None
    bar.close()
    summary.retries = platform.retries
    return summary


class Interrupted(Exception):
    def __init__(self, summary: Summary, done: int, total: int):
        super().__init__(f"interrupted after {done} of {total} scores; run the same command again to resume "
                         "(nothing is posted twice)")
        self.summary = summary


def _plan(book, user_of: dict, maximum: float, ledger: dict[str, Post]) -> list[Plan]:
    plans = []
    stamp = now()
    for entry in book.graded:
        sub = entry.submission
        user_id = user_of[id(entry.student)]
        who = f"{sub.name} ({entry.student.name or user_id})"
        submitted = sub.submitted_at.isoformat() if sub.submitted_at else None
        final, raw = entry.final, entry.raw
        previous = ledger.get(user_id)
        payload = services.score_payload(user_id, final, maximum, comment_for(raw, final, maximum, entry.lateness,
                                                                               entry.decision is not None),
                                         submitted, stamp, new_submission=previous is None)
        print_ = fingerprint(payload, sub.name)
        if raw > maximum + 1e-9:
            plans.append(Plan(user_id, who, sub.name, payload, print_, "refused",
                              f"score {raw:g} is above the maximum {maximum:g}: not posted (is course.yml's "
                              "points right, or the results from another course?)"))
        elif raw < 0:
            plans.append(Plan(user_id, who, sub.name, payload, print_, "refused",
                              f"score {raw:g} is negative: not posted"))
        elif previous and previous.fingerprint == print_ and previous.state == POSTED:
            plans.append(Plan(user_id, who, sub.name, previous.payload, print_, "unchanged"))
        elif previous and previous.fingerprint == print_ and previous.state == PENDING:
            plans.append(Plan(user_id, who, sub.name, previous.payload, print_, "resume"))
        else:
            plans.append(Plan(user_id, who, sub.name, payload, print_, "post"))
    return plans


def _check_services(course: Course) -> None:
    if not course.lineitems_url:
        raise UsageError(f"course {course.name}: its launch gave no Assignment and Grade Services line-items URL: "
                         "enable AGS for the tool in the LMS and launch it again from the course")
    if not course.memberships_url:
        raise UsageError(f"course {course.name}: its launch gave no Names and Role Provisioning URL: enable NRPS "
                         "for the tool in the LMS and launch it again from the course")
    missing = [s for s in (services.SCORE_SCOPE, services.LINEITEM_SCOPE) if s not in course.ags_scopes]
    if missing:
        raise UsageError(f"course {course.name}: the platform did not grant {', '.join(missing)} (granted: "
                         f"{', '.join(course.ags_scopes) or 'none'}); allow the tool to create line items and post "
                         "scores in the LMS, then launch again")


def _bar(total: int, progress: bool | None):
    show = sys.stderr.isatty() if progress is None else progress
    return tqdm(total=total, disable=not show, unit="score", desc="posting", file=sys.stderr, leave=False)
