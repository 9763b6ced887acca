"""Adversarial submission (autograder test corpus): a correct submission plus one trick."""
