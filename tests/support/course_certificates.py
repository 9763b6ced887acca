"""The course's TLS certificates for a Dask cluster, made by docs/cluster.md's own commands, as an instructor would.

``make(base)`` runs the documentation's block (the one that starts ``mkdir -p -m 700 /shared/attention-tls``) with
``/shared/attention`` read as ``base``, so the files land in ``<base>-tls``: a CA, the cluster's certificate (the
scheduler's and the workers') and the grader's (the client's), each file mode 600.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

#: the documented folder, and the course folder its name is made from
DOCUMENTED, SHARED = "/shared/attention-tls", "/shared/attention"


@dataclass(frozen=True)
class Certificates:
    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def cluster(self) -> tuple[Path, Path]:
        return self.folder / "cluster.pem", self.folder / "cluster.key"

    @property
    def grader(self) -> tuple[Path, Path]:
        return self.folder / "grader.pem", self.folder / "grader.key"

    def grade_args(self) -> list[str]:
        """What ``grade autograde --scheduler tls://...`` is given, as docs/cluster.md says."""
        cert, key = self.grader
        return ["--tls-ca-file", str(self.ca), "--tls-cert", str(cert), "--tls-key", str(key)]

    def dask_args(self) -> list[str]:
        """What ``dask scheduler`` and ``dask worker`` are given: the cluster's certificate."""
        cert, key = self.cluster
        return ["--tls-ca-file", str(self.ca), "--tls-cert", str(cert), "--tls-key", str(key)]

    def client_security(self):
        """A Security for a Client of the course (the grader's certificate)."""
        from distributed.security import Security  # noqa: PLC0415 - the cluster extra

        cert, key = self.grader
        return Security(tls_ca_file=str(self.ca), tls_client_cert=str(cert), tls_client_key=str(key),
                        require_encryption=True)


def documented_block() -> str:
    text = (ROOT / "docs" / "cluster.md").read_text()
    return re.search(r"```\n(mkdir -p -m 700 /shared/attention-tls.*?)```", text, re.S).group(1)


def make(base: Path) -> Certificates:
    """Run docs/cluster.md's commands with ``/shared/attention`` as ``base``: the certificates in ``<base>-tls``."""
    script = documented_block().replace(SHARED, str(base))
    done = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    made = Certificates(Path(f"{base}-tls"))
    for path in (made.ca, *made.cluster, *made.grader):
        assert path.stat().st_mode & 0o077 == 0, f"{path}: mode {path.stat().st_mode:o}"
    return made
