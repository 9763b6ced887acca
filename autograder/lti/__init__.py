"""``grade lti``: grades straight into an LMS through LTI 1.3 (docs/lti.md).

One concept a module:

- ``store``: the small local sqlite store (platforms, deployments, launched courses, line items, the push ledger);
- ``keys``: the tool's RSA key pair (private key mode 0600, never printed) and its JWKS;
- ``tool``: the glue to pylti1p3next (its tool configuration from the store, a stdlib request, session and cookie,
  a service connector whose access tokens live in memory only);
- ``server``: ``grade lti serve``, the OIDC login, launch and JWKS endpoints, on waitress;
- ``limits``: what that server bounds (idle time, connections, request size) and the open-files limit it raises;
- ``members``: Names and Role Provisioning (NRPS) members as the roster that results are matched against;
- ``ags``: Assignment and Grade Services: the line item found or created once by ``resourceId``, score payloads,
  requests retried with backoff on 5xx and 429;
- ``push``: ``grade lti push``, the ledger that makes a re-run post nothing unchanged and a resumed push post
  nothing twice.

The extra (``pip install -e '.[lti]'``) is imported only here, lazily: ``require()`` says what to install.
"""
from __future__ import annotations

import importlib

from autograder.usage import UsageError


def require() -> None:
    """Raise a UsageError naming the extra when pylti1p3next (or waitress, requests) is not installed."""
    try:
        for name in ("jwcrypto", "pylti1p3", "requests", "waitress"):
            importlib.import_module(name)
    except ImportError as exc:
        raise UsageError(f"grade lti needs the lti extra ({exc.name} is missing): pip install -e '.[lti]'") from None
