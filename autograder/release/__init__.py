"""``grade release``: the student bundle (exercises, public checks, the code of ``grade check``) and its zip.

Nothing instructor-only goes in: no solution code, no hidden suite, no hidden case. The bundle's own
code is computed (the import closure of ``grade check``), so a new instructor-only import that
``grade check`` starts to need stops the build instead of shipping it.
"""
