"""grade lti against an independent LTI 1.3 platform on loopback: registration, a browser's OIDC launch, NRPS, AGS
line item found or created once, score posts checked against the AGS and Canvas score specifications, a re-run that
posts nothing, a regrade that changes two scores."""
from __future__ import annotations

import pytest

from .conftest import run_grade
from tests.support.lti_fixture import COURSE_YML, class_members, score_problems, start, stop, write_results

pytest.importorskip("pylti1p3", reason="pip install -e '.[lti]'")
pytest.importorskip("lti1p3platform", reason="pip install -e '.[test]'")

SCORES = {
    "alice": (10, "2025-03-14T20:00:00+01:00"),     # on time
    "bob": (8, "2025-03-14T23:10:00Z"),              # within the 15 min grace
    "carol": (6, "2025-03-16T11:59:00+01:00"),       # 2 started days late: -20%, 6 -> 4.8 (once)
    "dave": (9, None),                               # undated: on time
    "mallory": (10, "2025-03-14T20:00:00+01:00"),    # not in the LMS course
}


@pytest.fixture
def lms(tmp_path):
    lms = start(tmp_path, class_members(["alice", "bob", "carol", "dave", "yan"]))   # yan hands nothing in
    (tmp_path / "course.yml").write_text(COURSE_YML)
    write_results(tmp_path / "results", SCORES)
    yield lms
    stop(lms)


def push(lms, *extra):
    return run_grade("lti", "push", str(lms.tmp / "results"), "--lms-course", "ATT101", "--store", str(lms.store_dir),
                     "--course", str(lms.tmp / "course.yml"), *extra, timeout=300)


def column(lms) -> dict[str, float]:
    (item,) = lms.platform.book.lineitems
    return {user.split("-")[-1]: score for user, score in lms.platform.book.column(item).items()}


def test_round_trip(lms):
    book = lms.platform.book
    # a learner's launch stores nothing; the instructor's launch (a browser: redirects, then the form post) does
    learner = lms.launch("u-001-alice")
    assert learner.status_code == 200 and "nothing to do here" in learner.text
    assert "no course launched yet" in run_grade("lti", "courses", "--store", str(lms.store_dir)).stderr
    page = lms.launch("u-teacher")
    assert page.status_code == 200, page.text
    assert "grade lti push RESULTS --lms-course ATT101" in page.text
    listed = run_grade("lti", "courses", "--store", str(lms.store_dir)).stdout
    assert listed.startswith("ATT101\tAttention mechanisms, spring term") and "services: AGS, NRPS" in listed

    # --dry-run: says what it would post, creates and posts nothing
    dry = push(lms, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would post 4, unchanged 0, unmatched 2, refused 0" in dry.stderr
    assert "would post carol (Carol): 4.8/10 to LMS user u-003-carol" in dry.stdout
    assert book.lineitems == {} and book.scores() == []

    first = push(lms)
    assert first.returncode == 0, first.stderr
    assert "posted 4, unchanged 0, unmatched 2, refused 0" in first.stderr
    assert "results with no learner in the LMS course: mallory" in first.stderr
    assert "learners in the LMS course with no results: Yan (yan@uni.edu)" in first.stderr
    assert "(created)" in first.stderr
    (item,) = book.lineitems.values()
    assert (item["resourceId"], item["label"], item["scoreMaximum"]) == ("attention", "Attention unit", 10)
    # the late policy applied once: carol 6 -> 4.8, never 4.8 -> 3.84
    assert column(lms) == {"alice": 10, "bob": 8, "carol": 4.8, "dave": 9}
    scores = book.scores()
    assert len(scores) == 4
    for request in scores:
        assert score_problems(request) == [], request
    carol = next(r["body"] for r in scores if r["body"]["userId"] == "u-003-carol")
    assert carol["activityProgress"] == "Completed" and carol["gradingProgress"] == "FullyGraded"
    assert carol["submission"]["submittedAt"] == "2025-03-16T11:59:00+01:00"
    assert carol["https://canvas.instructure.com/lti/submission"]["submitted_at"] == "2025-03-16T11:59:00+01:00"
    assert "less 20% for 2 late day(s)" in carol["comment"]
    creations = [r for r in book.requests if r["method"] == "POST" and r["path"] == "/lineitems"]
    assert len(creations) == 1 and creations[0]["content_type"] == "application/vnd.ims.lis.v2.lineitem+json"

    # a re-run with nothing changed posts nothing and creates nothing
    again = push(lms)
    assert again.returncode == 0, again.stderr
    assert "posted 0, unchanged 4, unmatched 2, refused 0" in again.stderr
    assert len(book.scores()) == 4 and len(book.lineitems) == 1

    # a regrade changes two scores: those two are posted, with a newer timestamp; the column has the new scores
    write_results(lms.tmp / "results", {"bob": (9.5, "2025-03-14T23:10:00Z"), "dave": (7, None)})
    regrade = push(lms)
    assert regrade.returncode == 0, regrade.stderr
    assert "posted 2, unchanged 2, unmatched 2, refused 0" in regrade.stderr
    new = book.scores()[4:]
    assert sorted(r["body"]["userId"] for r in new) == ["u-002-bob", "u-004-dave"]
    for request in new:
        assert score_problems(request) == []
        old = next(r for r in scores if r["body"]["userId"] == request["body"]["userId"])
        assert request["body"]["timestamp"] > old["body"]["timestamp"]
        assert request["body"]["https://canvas.instructure.com/lti/submission"]["new_submission"] is False
    assert column(lms) == {"alice": 10, "bob": 9.5, "carol": 4.8, "dave": 7}
    assert len(book.lineitems) == 1
    # every service request carried a bearer token the platform accepted; the tokens were never written down
    stored = b"".join(p.read_bytes() for p in lms.store_dir.rglob("*") if p.is_file())
    assert lms.platform.tokens and not any(t.encode() in stored for t in lms.platform.tokens)


def test_the_score_checker_finds_what_is_wrong():
    """The control for score_problems: a payload a platform would take but the specifications refuse."""
    good = {"content_type": "application/vnd.ims.lis.v1.score+json",
            "body": {"userId": "u1", "scoreGiven": 4.8, "scoreMaximum": 10, "comment": "ok",
                     "timestamp": "2025-03-16T11:59:00.123456+00:00", "activityProgress": "Completed",
                     "gradingProgress": "FullyGraded"}}
    assert score_problems(good) == []
    bad = {"content_type": "application/json",
           "body": {"userId": 7, "scoreGiven": 12, "scoreMaximum": 10, "comment": "two\nlines",
                    "timestamp": "2025-03-16T11:59:00+0000", "activityProgress": "Done",
                    "gradingProgress": "FullyGraded", "https://canvas.instructure.com/lti/submission":
                        {"new_submission": "yes"}}}
    found = " | ".join(score_problems(bad))
    for words in ("content type", "userId", "above scoreMaximum", "one line", "sub-second", "activityProgress",
                  "new_submission"):
        assert words in found
