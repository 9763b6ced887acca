"""Helpers the tests share: users, browsers, corpora built on the fly, the LMS, the cluster's certificates."""
