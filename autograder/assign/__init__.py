"""``grade assign``: turn the reference solutions into the student version."""
