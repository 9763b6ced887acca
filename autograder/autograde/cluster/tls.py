"""Who may talk to the grading cluster: only a holder of the course's key, over TLS.

A Dask scheduler, its workers and their nannies run any function a connected client sends them
(``Client.run``, a task, a plugin). A plain ``tcp://`` address is open to anyone who can reach the port:
another user of the machine (the port is in ``/proc/net/tcp``) or of the cluster would run code as the
workers' user (root, for the sandbox's namespaces), read the reference answers from a warm grader, or
replace the grading function before a regrade. So:

- a LocalCluster (``--local-workers N``) is secured with a key made for the run, in memory, held by the
  grader and the workers it forks (``for_a_local_cluster``); no other process can join or connect;
- a running scheduler (``--scheduler``) must be ``tls://``, and the client shows the course's certificate
  (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``, or Dask's ``distributed.comm.tls.ca-file``,
  ``.client.cert`` and ``.client.key``); any other address is refused (``refusal``) unless
  ``--insecure-scheduler`` says the network is private. docs/cluster.md says how to make the certificates.

Shown by tests/system/test_cluster_security.py: another local user is refused by a LocalCluster (and, the control,
not by one started without security), and a scheduler set up as docs/cluster.md says refuses a client
without the course's certificate.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass

#: Dask's configuration keys for a client's certificate (also DASK_DISTRIBUTED__COMM__TLS__CA_FILE,
#: DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT and DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY)
CONFIG = {"ca_file": "distributed.comm.tls.ca-file", "cert": "distributed.comm.tls.client.cert",
          "key": "distributed.comm.tls.client.key"}
OPTIONS = {"ca_file": "--tls-ca-file", "cert": "--tls-cert", "key": "--tls-key"}


@dataclass(frozen=True)
class Credentials:
    """The course's certificate as a client shows it: the CA's certificate, the client's certificate and key."""

    ca_file: str
    cert: str
    key: str


def scheme(address: str) -> str:
    """``tls``, ``tcp``, ...: what Dask would connect with (an address without one is ``tcp``)."""
    return address.split("://", 1)[0].lower() if "://" in address else "tcp"


def credentials(ca_file: str | None = None, cert: str | None = None, key: str | None = None) -> dict:
    """The options given, each completed from Dask's configuration: {"ca_file": ..., "cert": ..., "key": ...}."""
    import dask

    given = {"ca_file": ca_file, "cert": cert, "key": key}
    return {field: str(given[field] or dask.config.get(CONFIG[field], None) or "") or None for field in given}


def refusal(address: str, insecure: bool, found: dict) -> str | None:
    """Why ``--scheduler address`` is refused (one line), or None: a ``tls://`` address with a readable
    certificate, or any address with ``--insecure-scheduler``."""
    if scheme(address) != "tls":
        if insecure:
            return None
        return (f"--scheduler {address} is not TLS: anyone who can reach that port could run code on the workers "
                "and read the course's answers; use a tls:// scheduler with the course's certificate "
                "(docs/cluster.md), or add --insecure-scheduler if the network is private to you")
    missing = [OPTIONS[field] for field, value in found.items() if not value]
    if missing:
        return (f"--scheduler {address} needs the course's certificate: {', '.join(missing)} (or Dask's "
                f"{', '.join(CONFIG[f] for f, v in found.items() if not v)}); docs/cluster.md says how to make it")
    for field, path in found.items():
        if not os.access(path, os.R_OK):
            return f"{OPTIONS[field]} {path}: no such file, or not readable by this user"
    mode = stat.S_IMODE(os.stat(found["key"]).st_mode)
    if mode & 0o077:
        return (f"--tls-key {found['key']} may be read by others (mode {mode:04o}): whoever reads it may run code on "
                f"the cluster; chmod 600 {found['key']}")
    return None


def for_a_scheduler(address: str, found: dict):
    """The Security a client connects to ``address`` with (``refusal`` said yes): the course's certificate
    for ``tls://``, none otherwise (``--insecure-scheduler``)."""
    from distributed.security import Security

    if scheme(address) != "tls":
        return Security()
    return Security(tls_ca_file=found["ca_file"], tls_client_cert=found["cert"], tls_client_key=found["key"],
                    require_encryption=True)


def for_a_local_cluster():
    """A key and certificate made for one LocalCluster, in memory only: its scheduler, nannies, workers and
    the grader's client all require it (mutual TLS), and no other process has it."""
    from distributed.security import Security

    return Security.temporary()
