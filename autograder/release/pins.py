"""Pinned requirements: the versions installed in the instructor's environment, dependencies included.

The kit is tested against exactly these versions, so that is what students and Gradescope install.
A dependency is followed when it is installed here; one that is not installed was excluded by its
environment marker (another platform, another Python, an extra) and is left out too. torch is pinned
without its local label (``2.13.0``, not ``2.13.0+cpu``): the CPU index serves ``+cpu`` wheels on
Linux and Windows, PyPI the (CPU-only) macOS wheels, and ``==2.13.0`` accepts both.
"""
from __future__ import annotations

import re
import sys
from importlib import metadata

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> str:
    """``torch==2.13.0 ; python_version < "4"`` -> ``torch``."""
    match = _NAME.match(spec)
    if not match:
        raise ValueError(f"not a requirement: {spec!r}")
    return canonical(match.group(1))


def installed_closure(roots: list[str]) -> dict[str, str]:
    """canonical name -> installed version, for ``roots`` and everything they need here."""
    pins: dict[str, str] = {}
    todo = list(roots)
    while todo:
        name = canonical(todo.pop())
        if name in pins:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if name in map(canonical, roots):
                raise LookupError(f"{name} is not installed in this environment ({metadata.sys.executable}): "
                                  "install the kit first (make install)") from None
            continue
        pins[name] = dist.version.split("+", 1)[0]
        for spec in dist.requires or []:
            requirement, _, marker = spec.partition(";")
            if "extra" in marker:
                continue
            if _NAME.match(requirement):
                todo.append(requirement_name(requirement))
    return dict(sorted(pins.items()))


def requirements_txt(pins: dict[str, str], purpose: str) -> str:
    lines = [f"# {purpose}",
             "# Exact versions the kit was tested with. torch, the CPU build, comes first from install_torch.py: an",
             f"# index line here ({TORCH_CPU_INDEX}) would be tried for every package, minutes each where it cannot be",
             "# reached, and then give PyPI's CUDA build in silence."]
    lines += [f"{name}=={version}" for name, version in pins.items()]
    return "\n".join(lines) + "\n"


def python_range(pins: dict[str, str], version: tuple[int, int] | None = None) -> str:
    """The Pythons the pins install on, as ``requires-python``: what every pin's own ``Requires-Python`` allows.

    The lower bound is the highest of the pins' lower bounds (numpy 2.4.6 and contourpy 1.3.3 need 3.11, so
    the bundle cannot promise 3.10); an upper bound is kept when a pin has one. The Python building the bundle
    must be in the range (its pins are installed on it). tests/system/test_release.py installs the requirements on
    the lowest and the highest Python of the range that the machine has, and checks the refusal below it."""
    from packaging import specifiers, version as versions  # noqa: PLC0415 - no dependency of the kit: pip brings it

    major, minor = version or sys.version_info[:2]
    low, high = versions.Version("3.0"), None
    for name in pins:
        try:
            needs = metadata.distribution(name).metadata.get("Requires-Python") or ""
        except metadata.PackageNotFoundError:
            continue
        for spec in specifiers.SpecifierSet(needs):
            bound = versions.Version(".".join(spec.version.split(".")[:2]).rstrip(".*"))
            if spec.operator in (">=", ">", "~=", "=="):
                low = max(low, bound)
            elif spec.operator == "<":
                high = bound if high is None else min(high, bound)
    this = versions.Version(f"{major}.{minor}")
    if this < low or (high is not None and this >= high):
        raise LookupError(f"the pins need Python >={low}{f',<{high}' if high else ''}, not {major}.{minor}")
    return f">={low.major}.{low.minor}" + (f",<{high}" if high else "")
