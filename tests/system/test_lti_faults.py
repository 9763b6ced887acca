"""grade lti push when things go wrong: 5xx and 429 retried with backoff, a 4xx reported and never retried, a refused
token, a score above the maximum, a line item whose creation answer is lost, a push interrupted half way; and the
tool's secrets stay out of everything it prints and stores."""
from __future__ import annotations

import stat

import pytest

from autograder.usage import UsageError
from autograder.lti.store import Store

from .conftest import run_grade
from tests.support.lti_fixture import COURSE_YML, class_members, start, stop, write_results

pytest.importorskip("pylti1p3", reason="pip install -e '.[lti]'")
pytest.importorskip("lti1p3platform", reason="pip install -e '.[test]'")

NAMES = ["alice", "bob", "carol", "dave"]


@pytest.fixture
def lms(tmp_path):
    lms = start(tmp_path, class_members(NAMES))
    (tmp_path / "course.yml").write_text(COURSE_YML)
    write_results(tmp_path / "results", {n: (i + 5, "2025-03-14T20:00:00+01:00") for i, n in enumerate(NAMES)})
    assert lms.launch("u-teacher").status_code == 200
    yield lms
    stop(lms)


class Sleeps(list):
    def __call__(self, seconds):
        self.append(seconds)


def push(lms, retry=None, **kwargs):
    from autograder.lti.ags import Retry  # noqa: PLC0415 - optional: the lti extra
    from autograder.lti.push import push as run  # noqa: PLC0415 - optional: the lti extra

    return run(Store(lms.store_dir), "ATT101", lms.tmp / "results", lms.tmp / "course.yml",
               retry=retry or Retry(base=0.5, sleep=Sleeps()), progress=False, say=lambda line: None, **kwargs)


def posts_for(lms, user):
    return [r for r in lms.platform.book.scores() if r["body"]["userId"] == user]


def test_5xx_and_429_are_retried_with_backoff(lms):
    from autograder.lti.ags import Retry  # noqa: PLC0415 - optional: the lti extra

    lms.platform.fail("/scores", 503, times=2)
    lms.platform.fail("/scores", 429, times=1, retry_after="7")
    sleeps = Sleeps()
    summary = push(lms, Retry(base=0.5, sleep=sleeps))
    assert summary.line() == "posted 4, unchanged 0, unmatched 0, refused 0"
    assert sleeps == [0.5, 1.0, 7.0]                 # doubled each time; Retry-After honoured
    assert len(posts_for(lms, "u-001-alice")) == 4    # 3 answered with an error, then the one that counted
    assert lms.platform.book.column(next(iter(lms.platform.book.lineitems)))["u-001-alice"] == 5
    assert "3 request(s) retried" in "\n".join(summary.lines())


def test_a_4xx_is_reported_and_not_retried_and_the_next_push_posts_it(lms):
    lms.platform.fail("/scores", 422, times=1)
    sleeps = Sleeps()
    from autograder.lti.ags import Retry  # noqa: PLC0415 - optional: the lti extra

    summary = push(lms, Retry(sleep=sleeps))
    assert summary.line() == "posted 3, unchanged 0, unmatched 0, refused 1"
    assert "alice" in summary.refused[0] and "refused, HTTP 422" in summary.refused[0]
    assert sleeps == [] and len(posts_for(lms, "u-001-alice")) == 1
    # the control: the next push posts what was refused, and only that
    again = push(lms)
    assert again.line() == "posted 1, unchanged 3, unmatched 0, refused 0"
    assert len(posts_for(lms, "u-001-alice")) == 2


def test_a_platform_that_refuses_the_token_is_said_plainly(lms):
    lms.platform.fail("/token", 401, times=1)
    with pytest.raises(UsageError, match="refused the tool's access token request .*HTTP 401.*JWKS URL"):
        push(lms)
    assert lms.platform.book.scores() == []
    assert push(lms).line() == "posted 4, unchanged 0, unmatched 0, refused 0"   # the control


def test_a_score_above_the_maximum_is_refused_not_posted(lms):
    write_results(lms.tmp / "results", {"bob": (12, None)})
    summary = push(lms)
    assert summary.line() == "posted 3, unchanged 0, unmatched 0, refused 1"
    assert "score 12 is above the maximum 10" in summary.refused[0]
    assert posts_for(lms, "u-002-bob") == [] and len(posts_for(lms, "u-001-alice")) == 1


def test_a_lost_creation_answer_never_makes_a_second_column(lms):
    lms.platform.lose_create_answer = 502            # the platform creates the line item, the answer is a 502
    summary = push(lms)
    assert summary.line() == "posted 4, unchanged 0, unmatched 0, refused 0"
    creations = [r for r in lms.platform.book.requests if r["method"] == "POST" and r["path"] == "/lineitems"]
    assert len(creations) == 1 and len(lms.platform.book.lineitems) == 1


def test_an_interrupted_push_resumes_without_posting_twice(lms):
    from autograder.lti.ags import Retry  # noqa: PLC0415 - optional: the lti extra
    from autograder.lti.push import Interrupted  # noqa: PLC0415 - optional: the lti extra

    def ctrl_c(_seconds):
        raise KeyboardInterrupt

    lms.platform.lose_answer_of = 2                  # bob's score lands; the answer is lost; Ctrl-C in the backoff
    with pytest.raises(Interrupted, match="interrupted after 1 of 4"):
        push(lms, Retry(sleep=ctrl_c))
    assert len(lms.platform.book.scores()) == 2
    lms.platform.lose_answer_of = None
    summary = push(lms)
    assert summary.line() == "posted 2, unchanged 2, unmatched 0, refused 0"
    assert summary.confirmed == ["bob (Bob)"]
    # one score POST per learner in all: bob's was found on the platform, never sent again
    assert sorted(r["body"]["userId"] for r in lms.platform.book.scores()) == [
        "u-001-alice", "u-002-bob", "u-003-carol", "u-004-dave"]


def test_the_private_key_stays_secret(lms, tmp_path):
    key = lms.store_dir / "tool-private.pem"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    body = "".join(key.read_text().splitlines()[1:-1])
    printed = run_grade("lti", "keys", "--store", str(lms.store_dir))
    pushed = run_grade("lti", "push", str(tmp_path / "results"), "--lms-course", "ATT101", "--store",
                       str(lms.store_dir), "--course", str(tmp_path / "course.yml"))
    assert printed.returncode == 0 and pushed.returncode == 0, pushed.stderr
    outputs = printed.stdout + printed.stderr + pushed.stdout + pushed.stderr
    assert '"n": "' in printed.stdout and '"d"' not in printed.stdout     # the control: the public key is printed
    for chunk in (body[i:i + 40] for i in range(0, len(body) - 40, 40)):
        assert chunk not in outputs
        assert chunk.encode() not in (lms.store_dir / "lti.sqlite3").read_bytes()
    # a key others can read is refused, with the fix
    key.chmod(0o644)
    loose = run_grade("lti", "keys", "--store", str(lms.store_dir))
    assert loose.returncode == 2 and "chmod 600" in loose.stderr
