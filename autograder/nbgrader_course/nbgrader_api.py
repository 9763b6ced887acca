"""``nbgrader.api``, imported without the 1.2 s of Lark grammars that no notebook schema uses, nor the 0.4 s of
nbgrader's Jupyter server extensions.

``import nbgrader.api`` imports jsonschema (through nbformat), whose format checkers import ``rfc3987_syntax``
when it is installed (``jsonschema[format-nongpl]``, which Jupyter's packages require): that module compiles
about 35 Earley parsers as it loads, 1.2 s of this machine's 2.4 s for ``import nbgrader.api``
(python-jsonschema/jsonschema#1428, opendatahub-io/notebooks#3532). They check the ``iri`` and
``iri-reference`` formats, which neither nbformat's schema nor nbgrader's use. So the kit imports nbgrader with
that module marked as absent, as ``import`` sees a package that is not installed; jsonschema then leaves those two
formats unchecked, in this process only. nbgrader's own commands are not touched.

``nbgrader/__init__.py`` itself loads its Jupyter server extensions (their handlers import jupyter_server,
nbconvert and nbgrader's exchange: 0.4-0.5 s), which the gradebook does not use. So the package is made from its
spec without running that file, and ``nbgrader.api`` is imported into it; once it is, the first name asked of the
package that it lacks (``nbgrader.__version__``, its extension hooks, ``nbgrader.server_extensions``) runs that file
then, in the same module, so every later use of ``nbgrader`` in the process finds the package whole.
"""
from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import sys
import threading

#: the module jsonschema's format checkers import if it is there (``jsonschema/_format.py``)
SLOW = "rfc3987_syntax"


def import_nbgrader_api():
    """``nbgrader.api`` (ImportError when nbgrader is not installed), imported fast."""
    importing = [True]
    with absent(SLOW):
        _package_first("nbgrader", importing)
        try:
            import nbgrader.api
            import nbgrader.utils
        finally:
            importing.clear()
    return nbgrader.api


class ImportedMeanwhile:
    """``import_nbgrader_api`` run in a thread of its own, started now, while this process waits on others
    (``grade autograde --nbgrader`` while its jobs grade: 0.3-0.4 s it would otherwise wait for afterwards).

    Start it only once this process forks nothing more: a fork while the thread holds an import lock would
    leave the child that lock held for ever. ``wait`` before any use; ``import_nbgrader_api`` then finds the
    modules loaded, or raises the same ImportError again."""

    def __init__(self) -> None:
        self._thread = threading.Thread(target=self._run, name="import-nbgrader-api", daemon=True)
        self._thread.start()

    @staticmethod
    def _run() -> None:
        with contextlib.suppress(Exception):  # said by the call after ``wait``, in the thread that uses it
            import_nbgrader_api()

    def wait(self) -> None:
        self._thread.join()


def _package_first(name: str, importing: list) -> None:
    """Put package ``name`` in ``sys.modules`` without running its ``__init__.py``, which runs when a name the
    package lacks is first asked for (PEP 562's module ``__getattr__``). While ``importing`` is true, a submodule's
    name is left to the import under way (``from . import utils`` asks the package for it first). Nothing happens if
    the package is imported already."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"No module named {name!r}", name=name)
    package = importlib.util.module_from_spec(spec)

    def complete(attribute: str):
        if importing and importlib.machinery.PathFinder.find_spec(f"{name}.{attribute}", package.__path__):
            raise AttributeError(attribute)
        del package.__getattr__  # the file's own names from now on
        try:
            spec.loader.exec_module(package)
        except BaseException:
            package.__getattr__ = complete  # tried again on the next name asked for
            raise
        return getattr(package, attribute)

    package.__getattr__ = complete
    sys.modules[name] = package


@contextlib.contextmanager
def absent(name: str):
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
