"""``nbformat``, imported without the Lark grammars of jsonschema's IRI format checkers: 1.2 CPU-s of each process
of the kit that reads or writes notebooks (``grade nbgrader``, ``grade release``, ``grade autograde --nbgrader``).

``import nbformat`` imports jsonschema, which imports ``rfc3987_syntax`` when it is installed (JupyterLab's
packages install it); that module compiles its parsers as it loads. Neither nbformat's schema nor nbgrader's uses
the two formats it checks, so it is marked absent while nbformat loads, as nbgrader_api.py does for nbgrader: in
this process only. The kit's modules import nbformat from here, before any ``from nbformat import ...``."""
from __future__ import annotations

from .nbgrader_api import SLOW, absent

with absent(SLOW):
    import nbformat

__all__ = ["nbformat"]
