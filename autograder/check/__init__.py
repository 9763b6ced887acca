"""``grade check``: a student's local check against the public cases shipped with the exercises."""
