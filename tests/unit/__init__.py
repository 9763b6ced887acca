"""Fast, in-process tests of single pieces: `make test` runs them first (pytest -m unit)."""
