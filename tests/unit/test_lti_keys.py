"""The LTI tool's key pair (autograder/lti/keys.py): the public key and the JWKS always follow the private key file."""
from __future__ import annotations

import pytest

from autograder.lti import keys

pytest.importorskip("cryptography")
pytest.importorskip("jwcrypto")


def test_a_key_made_anew_is_published_at_once(tmp_path):
    """The server derives the public key once per version of the key file: after ``make_private_key`` writes a new
    key (a lost or leaked key replaced), the public key and the JWKS's kid are the new key's, not the old one's."""
    path = tmp_path / "tool.key"
    keys.make_private_key(path)
    first, first_kid = keys.public_pem(path), keys.kid(path)
    assert keys.public_pem(path) == first  # asked again: the same key
    keys.make_private_key(path)
    assert keys.public_pem(path) == _public_half(path) != first and keys.kid(path) != first_kid


def _public_half(path) -> str:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - after the skip

    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")
