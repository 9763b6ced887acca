"""The local store of ``grade lti``: one folder, one sqlite file (standard library), the tool's keys beside it.

``DIR/lti.sqlite3`` holds what is not secret: the tool's public settings, each platform registered (issuer, client
id, its login, token and JWKS URLs), its deployments, each course launched once (the AGS line-items URL and
scopes, the NRPS memberships URL), the line item found or created per (course, resourceId), and the push ledger:
per (course, line item, LMS user) the fingerprint of the score last posted and whether that post is confirmed.
``DIR/tool-private.pem`` (mode 0600) is the only secret; access tokens are never stored (memory only). The ledger is
private all the same (who is in which course, their scores): the database and the files sqlite keeps beside it are
mode 0600, the folder 0700 when it is made here (an existing ``--store`` folder keeps its mode).

The folder: ``--store DIR``, else ``$GRADE_LTI_STORE``, else ``~/.attention-autograder/lti`` (outside the course
repository, so the key is never committed nor bundled).
"""
from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from autograder.usage import UsageError

SCHEMA = """
CREATE TABLE IF NOT EXISTS tool (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS platforms (
    issuer TEXT NOT NULL, client_id TEXT NOT NULL, auth_login_url TEXT NOT NULL, auth_token_url TEXT NOT NULL,
    auth_audience TEXT, key_set_url TEXT NOT NULL, PRIMARY KEY (issuer, client_id));
CREATE TABLE IF NOT EXISTS deployments (
    issuer TEXT NOT NULL, client_id TEXT NOT NULL, deployment_id TEXT NOT NULL,
    PRIMARY KEY (issuer, client_id, deployment_id));
CREATE TABLE IF NOT EXISTS courses (
    name TEXT PRIMARY KEY, issuer TEXT NOT NULL, client_id TEXT NOT NULL, deployment_id TEXT NOT NULL,
    context_id TEXT NOT NULL, context_title TEXT NOT NULL, lineitems_url TEXT, lineitem_url TEXT,
    ags_scopes TEXT NOT NULL, memberships_url TEXT, launched_by TEXT, launched_at TEXT NOT NULL,
    UNIQUE (issuer, client_id, deployment_id, context_id));
CREATE TABLE IF NOT EXISTS lineitems (
    course TEXT NOT NULL, resource_id TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY (course, resource_id));
CREATE TABLE IF NOT EXISTS posts (
    course TEXT NOT NULL, lineitem TEXT NOT NULL, user_id TEXT NOT NULL, submission TEXT NOT NULL,
    fingerprint TEXT NOT NULL, payload TEXT NOT NULL, state TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (course, lineitem, user_id));
"""
PENDING = "pending"      # about to be sent, or sent and not confirmed (an interrupted push)
POSTED = "posted"        # the platform said yes


def default_dir() -> Path:
    env = os.environ.get("GRADE_LTI_STORE")
    return Path(env).expanduser() if env else Path.home() / ".attention-autograder" / "lti"


@dataclass(frozen=True)
class Platform:
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    auth_audience: str | None
    key_set_url: str


@dataclass(frozen=True)
class Course:
    name: str
    issuer: str
    client_id: str
    deployment_id: str
    context_id: str
    context_title: str
    lineitems_url: str | None
    lineitem_url: str | None
    ags_scopes: tuple[str, ...]
    memberships_url: str | None
    launched_by: str | None
    launched_at: str


@dataclass(frozen=True)
class Post:
    user_id: str
    submission: str
    fingerprint: str
    payload: dict
    state: str


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def owner_only(db: Path) -> Path:
    """Make the ledger ``db`` mode 0600 before sqlite opens it, and the files sqlite keeps beside it.

    sqlite gives the ``-wal``, ``-shm`` and ``-journal`` files it makes the mode of the database file, whatever the
    umask, so a database created 0600 here keeps every one of them 0600, now and when they are made again later; a
    store made 0644 by an older kit is made 0600 (tests/system/test_lti_ledger_files.py, as a second local user).
    """
    os.close(os.open(db, os.O_RDWR | os.O_CREAT, 0o600))   # a new file: 0600 less the umask, never more
    for path in (db, *(db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal"))):
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            continue
        if mode & 0o077:
            try:
                path.chmod(0o600)
            except PermissionError:
                raise UsageError(f"{path} is readable by others (mode {mode:o}) and not yours to change: "
                                 f"chmod 600 {path}") from None
    return db


class Store:
    def __init__(self, folder: Path | None = None):
        self.dir = Path(folder).expanduser() if folder else default_dir()
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)   # a folder made here: 0700, whatever the umask
        self.db = sqlite3.connect(owner_only(self.dir / "lti.sqlite3"), timeout=30, isolation_level=None,
                                  check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    @property
    def private_key_path(self) -> Path:
        return self.dir / "tool-private.pem"

    def close(self) -> None:
        self.db.close()

    # -- the tool's own settings ------------------------------------------------------------------------
    def set_tool(self, **values: str) -> None:
        for key, value in values.items():
            self.db.execute("INSERT OR REPLACE INTO tool VALUES (?, ?)", (key, value))

    def tool(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM tool WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    # -- platforms and deployments --------------------------------------------------------------------------
    def add_platform(self, platform: Platform, deployments: list[str]) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO platforms VALUES (?, ?, ?, ?, ?, ?)",
                            (platform.issuer, platform.client_id, platform.auth_login_url, platform.auth_token_url,
                             platform.auth_audience, platform.key_set_url))
            for deployment in deployments:
                self.db.execute("INSERT OR IGNORE INTO deployments VALUES (?, ?, ?)",
                                (platform.issuer, platform.client_id, deployment))

    def platforms(self, issuer: str | None = None) -> list[Platform]:
        sql, args = "SELECT * FROM platforms", ()
        if issuer is not None:
            sql, args = sql + " WHERE issuer = ?", (issuer,)
        return [Platform(*row) for row in self.db.execute(sql + " ORDER BY issuer, client_id", args)]

    def platform(self, issuer: str, client_id: str) -> Platform | None:
        row = self.db.execute("SELECT * FROM platforms WHERE issuer = ? AND client_id = ?",
                              (issuer, client_id)).fetchone()
        return Platform(*row) if row else None

    def deployments(self, issuer: str, client_id: str) -> list[str]:
        return [r[0] for r in self.db.execute(
            "SELECT deployment_id FROM deployments WHERE issuer = ? AND client_id = ? ORDER BY deployment_id",
            (issuer, client_id))]

    # -- courses ------------------------------------------------------------------------------------------
    def save_course(self, course: Course) -> Course:
        """Record a launch: a course launched again keeps its name and gets the launch's newest URLs."""
        with self.db:
            row = self.db.execute("SELECT name FROM courses WHERE issuer = ? AND client_id = ? AND deployment_id = ? "
                                  "AND context_id = ?", (course.issuer, course.client_id, course.deployment_id,
                                                         course.context_id)).fetchone()
            name = row[0] if row else self._free_name(course.name)
            self.db.execute("INSERT OR REPLACE INTO courses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (name, course.issuer, course.client_id, course.deployment_id, course.context_id,
                             course.context_title, course.lineitems_url, course.lineitem_url,
                             json.dumps(list(course.ags_scopes)), course.memberships_url, course.launched_by,
                             course.launched_at))
        return self.course(name)

    def _free_name(self, wanted: str) -> str:
        taken = {r[0] for r in self.db.execute("SELECT name FROM courses")}
        name, n = wanted, 2
        while name in taken:
            name, n = f"{wanted}-{n}", n + 1
        return name

    def course(self, name: str) -> Course | None:
        row = self.db.execute("SELECT * FROM courses WHERE name = ?", (name,)).fetchone()
        if not row:
            return None
        values = list(row)
        values[8] = tuple(json.loads(values[8]))
        return Course(*values)

    def courses(self) -> list[Course]:
        return [self.course(r[0]) for r in self.db.execute("SELECT name FROM courses ORDER BY name")]

    def require_course(self, name: str) -> Course:
        course = self.course(name)
        if course is None:
            known = ", ".join(c.name for c in self.courses()) or "none yet"
            raise UsageError(f"--lms-course {name}: no such LMS course in {self.dir} (launched courses: {known}); "
                             "launch the kit once from the LMS course while grade lti serve runs (docs/lti.md)")
        if not self.platform(course.issuer, course.client_id):
            raise UsageError(f"course {name}: its platform {course.issuer} (client id {course.client_id}) is no "
                             "longer registered: grade lti register it again")
        if course.deployment_id not in self.deployments(course.issuer, course.client_id):
            raise UsageError(f"course {name}: deployment {course.deployment_id} of {course.issuer} is not registered "
                             "(grade lti register ... --deployment-id ID)")
        return course

    # -- line items ---------------------------------------------------------------------------------------
    def lineitem(self, course: str, resource_id: str) -> str | None:
        row = self.db.execute("SELECT url FROM lineitems WHERE course = ? AND resource_id = ?",
                              (course, resource_id)).fetchone()
        return row[0] if row else None

    def save_lineitem(self, course: str, resource_id: str, url: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO lineitems VALUES (?, ?, ?)", (course, resource_id, url))

    # -- the push ledger ----------------------------------------------------------------------------------
    def posts(self, course: str, lineitem: str) -> dict[str, Post]:
        rows = self.db.execute("SELECT user_id, submission, fingerprint, payload, state FROM posts "
                               "WHERE course = ? AND lineitem = ?", (course, lineitem))
        return {r[0]: Post(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in rows}

    def mark(self, course: str, lineitem: str, post: Post) -> None:
        """Write a ledger line at once (autocommit): a pending line before the request, posted after it."""
        self.db.execute("INSERT OR REPLACE INTO posts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (course, lineitem, post.user_id, post.submission, post.fingerprint,
                         json.dumps(post.payload, sort_keys=True), post.state, now()))
