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
             "# Exact versions the kit was tested with. torch is the CPU build (no CUDA download):",
             f"--extra-index-url {TORCH_CPU_INDEX}"]
    lines += [f"{name}=={version}" for name, version in pins.items()]
    return "\n".join(lines) + "\n"


def python_range(pins: dict[str, str], version: tuple[int, int] | None = None) -> str:
    """The Pythons the pins install on, as ``requires-python``: the minor version they were frozen from.

    The pins are this environment's exact versions, and several are compiled (torch, numpy, contourpy...):
    their wheels are per CPython minor version, and a pin may need a newer Python than an older one has
    (numpy 2.4 and contourpy 1.3.3 need 3.11). The one Python known to install them all is the one they
    were installed on here, so that is the range; each pin's own ``Requires-Python`` must agree with it."""
    major, minor = version or sys.version_info[:2]
    here = f"{major}.{minor}.0"
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet  # noqa: PLC0415
    except ImportError:  # pragma: no cover - pip and pytest bring packaging
        SpecifierSet = None
    if SpecifierSet is not None:
        for name in pins:
            try:
                needs = metadata.distribution(name).metadata.get("Requires-Python")
            except metadata.PackageNotFoundError:
                continue
            try:
                if needs and here not in SpecifierSet(needs):
                    raise LookupError(f"{name}=={pins[name]} needs Python {needs}, not {major}.{minor}")
            except InvalidSpecifier:
                continue
    return f">={major}.{minor},<{major}.{minor + 1}"
