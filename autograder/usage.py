"""A mistake in what the user asked for: a missing folder, a bad option, a broken course.yml."""


class UsageError(Exception):
    """Said to the user as ``error: <message>``; the ``grade`` command then exits with status 2."""
