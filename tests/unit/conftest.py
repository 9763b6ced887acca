"""The names the tests of this folder import as ``.conftest`` (tests/conftest.py has them)."""
from tests.conftest import CORPUS, MANIFEST, ROOT, run_grade  # noqa: F401 - imported from here as .conftest
