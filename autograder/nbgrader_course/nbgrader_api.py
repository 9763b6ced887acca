"""``nbgrader.api``, imported without the 1.2 s of Lark grammars that no notebook schema uses.

``import nbgrader.api`` imports jsonschema (through nbformat), whose format checkers import ``rfc3987_syntax``
when it is installed (``jsonschema[format-nongpl]``, which Jupyter's packages require): that module compiles
about 35 Earley parsers as it loads, 1.2 s of this machine's 2.4 s for ``import nbgrader.api``
(python-jsonschema/jsonschema#1428, opendatahub-io/notebooks#3532). They check the ``iri`` and
``iri-reference`` formats, which neither nbformat's schema nor nbgrader's use. So the kit imports nbgrader with
that module marked as absent, as ``import`` sees a package that is not installed; jsonschema then leaves those two
formats unchecked, in this process only. nbgrader's own commands are not touched.
"""
from __future__ import annotations

import contextlib
import sys

#: the module jsonschema's format checkers import if it is there (``jsonschema/_format.py``)
SLOW = "rfc3987_syntax"


def import_nbgrader_api():
    """``nbgrader.api`` (ImportError when nbgrader is not installed), imported fast."""
    with _absent(SLOW):
        import nbgrader.api  # noqa: PLC0415 - optional: nbgrader is no dependency of the kit
    return nbgrader.api


@contextlib.contextmanager
def _absent(name: str):
    """While the block runs, ``import name`` raises ImportError, unless jsonschema's checkers are loaded already
    (then the block changes nothing) or the module itself is."""
    if "jsonschema._format" in sys.modules or name in sys.modules:
        yield
        return
    sys.modules[name] = None  # the import system's own mark for "not importable"
    try:
        yield
    finally:
        if sys.modules.get(name, ...) is None:
            del sys.modules[name]
