"""A mistake in what the user asked for: a missing folder, a bad option, a broken course.yml."""
from __future__ import annotations


class UsageError(Exception):
    """Said to the user as ``error: <message>``; the ``grade`` command then exits with status 2."""


#: a user's mistake's exit status
USAGE = 2


def exit_status(verb, **options) -> int:
    """``verb(**options)``'s exit status, a user's mistake said as ``error: ...`` on standard error with status 2: the
    one mapping the command line (``cli._run``) and the warm ``grade check`` server (``check/warm_server.py``) share.
    A shared folder another user made first (``worker/owned_dirs.Refused``) is said the same way."""
    from autograder.console import error
    from autograder.worker.owned_dirs import Refused

    try:
        code = verb(**options)
    except (UsageError, Refused) as exc:
        error(str(exc))
        return USAGE
    return int(code or 0)

