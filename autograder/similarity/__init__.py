"""``grade similarity``: rank pairs of submissions by the code they share, beyond what everyone may share.

It reads and parses code, never runs it, and never gives a verdict: a high rank is a reason to look.
"""
