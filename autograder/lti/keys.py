"""The tool's RSA key pair: the private key written once with mode 0600 and never printed; the public JWKS."""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from autograder.usage import UsageError

LOGIN_PATH = "/lti/login"
LAUNCH_PATH = "/lti/launch"
JWKS_PATH = "/lti/jwks"


def make_private_key(path: Path) -> None:
    """Write a new 2048-bit RSA private key to ``path``, created with mode 0600 (never readable by others)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    tmp = path.with_name(path.name + ".new")
    if tmp.exists():
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, pem)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def check_private_key(path: Path) -> None:
    """Refuse a private key that others can read (a copy made by hand, a lax umask on a shared disk)."""
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise UsageError(f"{path} is readable by others (mode {mode:o}): chmod 600 {path}")


def private_pem(path: Path) -> str:
    check_private_key(path)
    return path.read_text(encoding="ascii")


def public_pem(path: Path) -> str:
    """The public half of the key in ``path``, derived once per version of the file (the server asks on every launch
    and every JWKS fetch; loading a private key checks it, about 40 ms of CPU): a key written anew (make_private_key
    replaces the file) is another inode, so it is derived again."""
    info = path.stat()
    return _public_pem(str(path), info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=8)
def _public_pem(path: str, *identity: int) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def jwks(path: Path) -> dict:
    """The public key set the platform checks the tool's signatures with (kid: the key's RFC 7638 thumbprint)."""
    from jwcrypto.jwk import JWK

    key = JWK.from_pem(public_pem(path).encode("ascii"))
    public = json.loads(key.export_public())
    public.update(kid=key.thumbprint(), alg="RS256", use="sig")
    return {"keys": [public]}


def kid(path: Path) -> str:
    return jwks(path)["keys"][0]["kid"]


def endpoints(base_url: str) -> dict[str, str]:
    """What to paste into the LMS's developer-key (Canvas) or external tool (Moodle) form."""
    base = base_url.rstrip("/")
    return {"login_url": base + LOGIN_PATH, "launch_url": base + LAUNCH_PATH, "jwks_url": base + JWKS_PATH,
            "redirect_uris": base + LAUNCH_PATH}
