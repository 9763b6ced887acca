"""Where a hidden suite is run: the engine that grades one submission with the course's hidden suites.

``session.Grader`` loads the course, the reference and the suites once, then grades submission after
submission; ``plugin`` hands each hidden test its ``check`` and records each count's outcome, run by
``direct`` (the tests called directly) or ``suite_runner`` (``pytest.main``); ``gradescope_results`` and
``submission_page`` turn the outcomes into results.json and the feedback page; ``problems`` records what a
person should look at. ``authoring`` is what the hidden suites themselves import (``@step``, seeded inputs).
Borrowed by ``grade autograde`` (``autograder/autograde/``), ``grade assign``, the nbgrader course and the
Dask workers (``autograder/autograde/cluster/``).
"""
