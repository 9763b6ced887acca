"""Hidden suites: instructor side only, never shipped to students.

One file per module, one class per step (``@step("module.name")``), one method per count
(``test_<count>``, points from course.yml). Cases on the documents' inputs are ``public=True``: they
are recorded for ``grade check``. Randomized cases (other shapes, seeds, dtypes) are what make
hard-coded outputs score nothing.
"""
