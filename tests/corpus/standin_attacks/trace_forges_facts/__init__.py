"""Sample submission (autograder test corpus)."""
