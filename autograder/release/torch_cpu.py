"""Install torch 2.13.0, the CPU build, into the running Python, and say in one line what was installed.

PyPI's ``torch==2.13.0`` for Linux is the CUDA build (2.7 GB, a 5.4 GB environment); the CPU build lives on
PyTorch's own index. So this asks that index first, once, with a short timeout: where it answers, pip installs
torch from it (``2.13.0+cpu``, which ``torch==2.13.0`` accepts). Where it does not (no network to it, a mirror-only
machine), pip is never pointed at it (pip would try it five times per package, minutes each, and then install the
CUDA build in silence): torch comes from pip's own configuration (PyPI, or a local wheel through ``find-links``), and
the one line says which build that gave. ``make install`` runs it for the kit; the student bundle ships it as
``install_torch.py`` (its README's install step). Standard library only: it runs before anything is installed.
tests/unit/test_torch_install.py runs it with the index unreachable.
"""
from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request

TORCH = "2.13.0"
CPU_INDEX = os.environ.get("AUTOGRADER_TORCH_CPU_INDEX", "https://download.pytorch.org/whl/cpu")
#: how long the index may take to answer once before it is taken as unreachable
PROBE_SECONDS = float(os.environ.get("AUTOGRADER_TORCH_INDEX_TIMEOUT", "5"))


def reachable(index: str = CPU_INDEX, timeout: float = PROBE_SECONDS) -> tuple[bool, str]:
    """Whether ``index`` answers for torch within ``timeout`` seconds, and if not, why (a few words)."""
    try:
        with urllib.request.urlopen(f"{index}/torch/", timeout=timeout) as answer:
            return answer.status == 200, f"HTTP {answer.status}"
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, str(getattr(reason, "strerror", None) or reason)[:120]


def installed_build(python: str = sys.executable) -> str | None:
    """The installed torch's version and build, as ``2.13.0+cpu (CPU build)``; None where none imports."""
    probe = "import torch; print(torch.__version__, 'CUDA ' + torch.version.cuda if torch.version.cuda else 'CPU')"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return None
    version, _, build = done.stdout.strip().partition(" ")
    return f"{version} ({build} build)"


def install(quiet: bool = False) -> int:
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *(["--quiet"] if quiet else [])]
    ok, why = reachable()
    if ok:
        code = subprocess.run([*pip, "--index-url", CPU_INDEX, f"torch=={TORCH}"]).returncode
        where = f"from PyTorch's CPU index ({CPU_INDEX})"
    else:
        code = subprocess.run([*pip, f"torch=={TORCH}"]).returncode
        where = f"PyTorch's CPU index ({CPU_INDEX}) cannot be reached ({why}); installed from pip's own sources instead"
    build = installed_build() if code == 0 else None
    if build is None:
        print(f"torch {TORCH} was not installed ({where})", file=sys.stderr)
        return code or 1
    print(f"torch {build}, {where}")
    return 0


if __name__ == "__main__":
    sys.exit(install(quiet="--quiet" in sys.argv[1:]))
