"""Keep pytest out of the adversarial submissions.

Some submissions carry their own ``conftest.py`` (a trick: it must never run, least of all in the kit's own test
run). pytest reads this file before it walks into the folders below, and ``collect_ignore_glob`` stops it there.
"""
collect_ignore_glob = ["*"]
