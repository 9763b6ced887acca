"""Fast, in-process tests of single pieces: `pytest -m unit -n 2` runs them alone in about a minute."""
