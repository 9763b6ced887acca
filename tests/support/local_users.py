"""Local users for the tests that must run as the kit's users are: a normal user, and a second one beside them.

When the suite runs as root, ``user("attn-student")`` makes (once, with ``useradd``) an unprivileged user with a home
of its own, and ``run_as`` runs a command as that user: its own uid and gid, no supplementary groups, its own HOME,
and a PATH that does not lead into root's home. When the suite runs as a normal user, the current user is the normal
user, and a second one cannot be made: ``other_user()`` skips the test that needs one, saying why.

A normal user cannot run the interpreter of a virtual environment whose base Python sits in root's home (pyenv under
``/root``, mode 0700): ``python_for(user)`` finds a Python 3.11 that user can execute (the system's), and
``site_packages()`` is this environment's, which such a user may put on ``PYTHONPATH`` (same minor version, same
ABI) to import the kit's dependencies without installing them again.
"""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

#: the users the suite makes when it runs as root (NEWCOMER: one test's alone, see ``user_of_its_own``)
STUDENT, OTHER, NEWCOMER = "attn-student", "attn-other", "attn-newcomer"


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: Path

    def env(self, extra: dict | None = None) -> dict:
        """The environment a login shell of this user would have (no variable of ours leaks into it)."""
        env = {"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "LANG": "C.UTF-8",
               "PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": "/tmp"}
        for key in ("PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_DISABLE_PIP_VERSION_CHECK",
                    "PIP_COMPILE", "GRADE_CHECK_SERVER"):
            if key in os.environ:
                env[key] = os.environ[key]
        return {**env, **(extra or {})}


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _entry(name: str) -> User:
    entry = pwd.getpwnam(name)
    return User(entry.pw_name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


def user(name: str) -> User:
    """The unprivileged user ``name``, made with a home of its own if the suite runs as root and it does not exist."""
    try:
        return _entry(name)
    except KeyError:
        pass
    if not is_root():
        pytest.skip(f"the user {name} does not exist, and a normal user cannot make one")
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    done = subprocess.run([useradd, "--create-home", "--shell", "/bin/bash", "--user-group", name],
                          capture_output=True, text=True)
    if done.returncode not in (0, 9):  # 9: it exists already (made meanwhile by another run of the suite)
        pytest.skip(f"could not make the user {name}: {done.stderr.strip()}")
    return _entry(name)


def current() -> User:
    entry = pwd.getpwuid(os.getuid())
    return User(entry.pw_name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


def normal_user() -> User:
    """The normal user a journey runs as: the student user made here as root, else whoever runs the suite."""
    return user(STUDENT) if is_root() else current()


def user_of_its_own() -> User | None:
    """A normal user that nothing else runs as, so that what they own in /tmp after a command is that command's: one
    made for it when the suite runs as root (no test but the one that asks runs as it, and a normal user's run of the
    suite beside this one runs as its own user). ``None`` when the suite runs as a normal user: then the only normal
    user is the suite's own, whose other tests write in /tmp meanwhile."""
    return user(NEWCOMER) if is_root() else None


def owned(who: User, folder: str) -> set[str]:
    """The entries of ``folder`` that ``who`` owns (none where it cannot be listed)."""
    try:
        return {e.path for e in os.scandir(folder) if e.stat(follow_symlinks=False).st_uid == who.uid}
    except OSError:
        return set()


def chown_tree(who: User, path: Path) -> None:
    """Give ``path`` and everything under it to ``who`` (links themselves, never what they point to)."""
    for p in [path, *path.rglob("*")]:
        os.lchown(p, who.uid, who.gid)


def temporary_folder(who: User, prefix: str) -> Path:
    """A folder for ``who``'s run as its ``TMPDIR``: theirs alone (0700), so that what is in it afterwards is what
    that run left there, whoever else writes in /tmp meanwhile."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    os.chown(folder, who.uid, who.gid)
    return folder


def other_user() -> User:
    """A second normal user on the same machine, beside ``normal_user()``; skips where none can be made."""
    if not is_root():
        pytest.skip("a second local user can be made only when the suite runs as root")
    return user(OTHER)


def _become(who: User):
    def switch():  # pragma: no cover - runs in the child, before exec
        os.setgroups([])
        os.setresgid(who.gid, who.gid, who.gid)
        os.setresuid(who.uid, who.uid, who.uid)
        os.umask(0o022)
    return switch


def run_as(who: User, argv: list[str], *, cwd: Path | str | None = None, env: dict | None = None,
           timeout: float = 900, check: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """Run ``argv`` as ``who`` (as is, when ``who`` is the current user), with that user's environment."""
    preexec = None if who.uid == os.getuid() else _become(who)
    return subprocess.run(argv, cwd=str(cwd or who.home), env=who.env(env), preexec_fn=preexec, timeout=timeout,
                          check=check, capture_output=kwargs.pop("capture_output", True),
                          text=kwargs.pop("text", True), **kwargs)


def popen_as(who: User, argv: list[str], *, cwd: Path | str | None = None, env: dict | None = None,
             **kwargs) -> subprocess.Popen:
    preexec = None if who.uid == os.getuid() else _become(who)
    return subprocess.Popen(argv, cwd=str(cwd or who.home), env=who.env(env), preexec_fn=preexec, **kwargs)


def python_for(who: User) -> str:
    """A Python 3.11 ``who`` can execute: this one if they can, else the system's."""
    for candidate in (sys.executable, os.path.realpath(sys.executable), "/usr/bin/python3.11",
                      "/usr/local/bin/python3.11"):
        if Path(candidate).is_file() and _can_execute(who, candidate):
            return candidate
    pytest.skip(f"no Python 3.11 that {who.name} can execute")


def _can_execute(who: User, path: str) -> bool:
    if who.uid == os.getuid():
        return os.access(path, os.X_OK)
    try:
        done = run_as(who, [path, "-c", "import sys; assert sys.version_info[:2] == (3, 11)"], cwd="/", timeout=60)
    except PermissionError:  # not executable by that user (its base interpreter in root's home)
        return False
    return done.returncode == 0


def site_packages() -> str:
    """This environment's site-packages (the kit's dependencies), for ``PYTHONPATH``."""
    return sysconfig.get_paths()["purelib"]


def readable_by(who: User, path: Path | str) -> bool:
    """Whether ``who`` can open ``path`` for reading (a real open, as that user)."""
    done = run_as(who, ["/bin/sh", "-c", 'exec 3< "$1"', "sh", str(path)], cwd="/", timeout=60)
    return done.returncode == 0
