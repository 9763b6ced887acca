"""Adversarial submission (autograder test corpus): a correct submission plus one trick."""
try:
    raise RuntimeError('broken __init__')
finally:
    raise SystemExit(3)
