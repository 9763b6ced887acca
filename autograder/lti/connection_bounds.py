"""What ``grade lti serve`` bounds, so that idle, slow or oversized clients cannot starve the LMS's requests.

The server is waitress (a maintained pure-Python WSGI server): one thread holds every connection in a poll() loop and
reads each request whole before one of its few worker threads sees it, so an idle or slow client costs a descriptor
and a little memory, never a thread, and never blocks the accept loop. On top of that, these settings:

- an idle connection (nothing received for ``IDLE_TIMEOUT`` seconds, no request being answered) is closed;
  ``--idle-timeout`` changes it (tests/system/test_lti_hostile_network.py,
  test_an_idle_connection_is_closed_after_its_timeout);
- a request body of ``MAX_BODY`` or more is answered 413 and its connection closed, from its Content-Length, before
  a byte of the body is read (a chunked body is cut off at ``MAX_BODY``); headers are capped at ``MAX_HEADERS``
  (test_an_oversized_body_is_refused_unread). A launch is a form post of an id_token and a state: a few kB, tens of
  kB with a platform's custom claims; 1 MiB is far above any real one and small enough to hold in memory;
- at most ``MAX_CONNECTIONS`` connections at once, and never more than the open-files limit leaves room for (each
  connection may hold a second descriptor, a body spilled to a temporary file): accept() never fails for want of a
  descriptor, which is what made the standard library's server spin. Past the bound, new connections wait in the
  kernel's listen queue until idle ones time out;
- the open-files limit: ``raise_open_files()`` raises the soft limit (1024 on most Linux systems) to what
  ``MAX_CONNECTIONS`` needs, or to the hard limit when that is lower; then fewer connections are served at once, and
  ``grade lti serve`` says how many at start-up (test_a_launch_is_answered_while_2000_idle_connections_are_open starts
  the server with a soft limit of 1024 and holds 2,000 idle connections open).
"""
from __future__ import annotations

try:
    import resource
except ImportError:  # pragma: no cover - Windows has no such limit
    resource = None

IDLE_TIMEOUT = 30            # seconds: a browser's or the LMS's keep-alive connection is reused well within that
MAX_BODY = 1024 * 1024       # bytes: a body this large or larger is refused (413) unread
MAX_HEADERS = 64 * 1024      # bytes: the request line and headers (a login's query string is a few kB)
MAX_CONNECTIONS = 4096       # at once; 2,000 idle ones leave room for the LMS's and the browsers' requests
RESERVE = 64                 # descriptors kept for the store, the requests to the platform, the listening socket
THREADS = 4                  # answer requests: a launch is milliseconds of work and one JWKS fetch from the platform
IN_MEMORY = 64 * 1024        # bytes of a body held in memory; a longer one (up to MAX_BODY) waits in a temporary file
WANTED_OPEN_FILES = 2 * MAX_CONNECTIONS + RESERVE


def open_files() -> int:
    """The process's soft limit on open descriptors (what it may open now)."""
    if resource is None:  # pragma: no cover
        return WANTED_OPEN_FILES
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return WANTED_OPEN_FILES if soft == resource.RLIM_INFINITY else soft


def raise_open_files() -> tuple[int, int | None]:
    """Raise the soft open-files limit towards ``WANTED_OPEN_FILES``, as far as the hard limit lets a normal user;
    return (the soft limit now, the hard limit, None when unlimited)."""
    if resource is None:  # pragma: no cover
        return WANTED_OPEN_FILES, None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = WANTED_OPEN_FILES if hard == resource.RLIM_INFINITY else min(WANTED_OPEN_FILES, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):  # pragma: no cover - a platform that refuses: the limit stays as it was
            pass
    return open_files(), None if hard == resource.RLIM_INFINITY else hard


def max_connections(files: int) -> int:
    """How many connections fit in ``files`` descriptors: two each (the socket, a body spilled to a file), and the
    reserve; at most ``MAX_CONNECTIONS``."""
    return max(1, min(MAX_CONNECTIONS, (files - RESERVE) // 2))


def waitress_settings(connections: int, idle_timeout: int) -> dict:
    """waitress's adjustments for these bounds."""
    return {
        "channel_timeout": idle_timeout,
        "cleanup_interval": max(1, idle_timeout // 4),   # idle connections are looked for this often
        "connection_limit": connections + 2,             # waitress counts its listening socket and its wake-up pipe
        "max_request_body_size": MAX_BODY,
        "max_request_header_size": MAX_HEADERS,
        "inbuf_overflow": IN_MEMORY,
        "threads": THREADS,
        "asyncore_use_poll": True,                       # select() cannot watch a descriptor numbered 1024 or more
    }
